//! The native hot path of kenning: Hamming top-k scan, sign binarization, int8 quantization,
//! BLAKE3 content hashing, manifest diffing and the file walk. The modules are plain Rust; `py`
//! holds every Python binding.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod binarize;
pub mod diff;
pub mod error;
pub mod hamming;
pub mod hash;
mod parallel;
mod platform;
#[cfg(feature = "python")]
mod py;
pub mod quantize;
pub mod walk;

pub use error::{CoreError, CoreResult};
