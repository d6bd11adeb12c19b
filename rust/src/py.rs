//! Python bindings (`kenning._core`). Arguments arrive checked by `kenning.kernels`; the checks
//! here repeat the ones that guard memory, so a direct call can fail but never crash.

use numpy::ndarray::{Array1, Array2};
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use crate::error::CoreError;
use crate::hamming::{Filter, Kernel, Shape};
use crate::{binarize as bin, diff as manifest, hash, quantize as quant, walk as tree};

/// The error for a scan given both filters, worded as in the NumPy twin.
const BOTH_FILTERS: &str = "hamming_topk takes a mask or row ids, not both";

/// Work (in bytes touched) above which the GIL is released while the kernel runs.
const DETACH_BYTES: usize = 1 << 16;

impl From<CoreError> for PyErr {
    fn from(error: CoreError) -> PyErr {
        match error {
            CoreError::Value(message) => PyValueError::new_err(message),
            CoreError::Type(message) => PyTypeError::new_err(message),
        }
    }
}

/// Runs `f` with the GIL released when the job is big enough to be worth it.
///
/// Why the NumPy buffers that `f` borrows may be read without the GIL: each comes from a
/// `PyReadonlyArray`, which stays alive (holding a reference to the array, so the buffer cannot
/// be freed or resized) until the binding returns, after `f`; and rust-numpy registers it as a
/// shared borrow, so no other Rust code can take a mutable view of the same memory meanwhile.
/// What that cannot stop is Python code in another thread writing into the same array during
/// the call. That is a data race, and in Rust's memory model a data race is undefined
/// behaviour, whatever the element type: the compiler may assume the borrowed slice does not
/// change under it. We accept it as blake3-py and NumPy's own C loops do when they release the
/// GIL: preventing it would mean copying every buffer first (the scan's whole input, on every
/// call), and only a caller that writes an array while passing it to kenning can cause it.
/// kenning's Python side never does; a caller that does owns the race.
fn run<T: Send>(py: Python<'_>, bytes: usize, f: impl FnOnce() -> T + Send) -> T {
    if bytes >= DETACH_BYTES {
        py.detach(f)
    } else {
        f()
    }
}

fn slice<'a, T: numpy::Element, D: numpy::ndarray::Dimension>(
    array: &'a numpy::PyReadonlyArray<'_, T, D>,
    name: &str,
) -> PyResult<&'a [T]> {
    let contiguous = array.is_c_contiguous();
    match array.as_slice() {
        Ok(data) if contiguous => Ok(data),
        _ => Err(PyValueError::new_err(format!(
            "{name} must be C-contiguous; pass np.ascontiguousarray({name})"
        ))),
    }
}

fn shaped<T>(rows: usize, cols: usize, data: Vec<T>) -> PyResult<Array2<T>> {
    Array2::from_shape_vec((rows, cols), data).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `threads` 0 = automatic.
#[pyfunction]
#[pyo3(signature = (x, center=None, *, threads=0))]
fn binarize<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f32>,
    center: Option<PyReadonlyArray1<'py, f32>>,
    threads: usize,
) -> PyResult<Bound<'py, PyArray2<u8>>> {
    let [rows, dims] = [x.shape()[0], x.shape()[1]];
    let data = slice(&x, "x")?;
    let center = center.as_ref().map(|c| slice(c, "center")).transpose()?;
    let width = bin::packed_width(dims);
    let mut out = vec![0u8; rows * width];
    run(py, data.len() * 4, || {
        bin::binarize(data, rows, dims, center, &mut out, threads)
    })?;
    Ok(shaped(rows, width, out)?.into_pyarray(py))
}

type Quantized<'py> = (Bound<'py, PyArray2<i8>>, Bound<'py, PyArray1<f32>>);

#[pyfunction]
fn quantize_int8<'py>(py: Python<'py>, x: PyReadonlyArray2<'py, f32>) -> PyResult<Quantized<'py>> {
    let [rows, dims] = [x.shape()[0], x.shape()[1]];
    let data = slice(&x, "x")?;
    let (mut codes, mut scales) = (vec![0i8; data.len()], vec![0f32; rows]);
    run(py, data.len() * 4, || {
        quant::quantize(data, dims, &mut codes, &mut scales)
    })?;
    Ok((
        shaped(rows, dims, codes)?.into_pyarray(py),
        Array1::from_vec(scales).into_pyarray(py),
    ))
}

#[pyfunction]
fn rescore<'py>(
    py: Python<'py>,
    query: PyReadonlyArray1<'py, f32>,
    rows: PyReadonlyArray2<'py, i8>,
    scales: PyReadonlyArray1<'py, f32>,
) -> PyResult<Bound<'py, PyArray1<f32>>> {
    let (query, codes, scales) = (
        slice(&query, "query")?,
        slice(&rows, "rows")?,
        slice(&scales, "scales")?,
    );
    if rows.shape()[1] != query.len() {
        return Err(CoreError::Value(format!(
            "rows have {} dims but the query has {}",
            rows.shape()[1],
            query.len()
        ))
        .into());
    }
    let mut out = vec![0f32; scales.len()];
    run(py, codes.len(), || {
        quant::rescore(query, codes, scales, &mut out)
    })?;
    Ok(Array1::from_vec(out).into_pyarray(py))
}

type TopK<'py> = (Bound<'py, PyArray2<i64>>, Bound<'py, PyArray2<u32>>);

/// `mask` (bool per db row) or `ids` (sorted unique row ids) filter the scan; `threads` 0 =
/// automatic; `kernel` names a popcount kernel from `kernels()` (default: the fastest).
#[pyfunction]
#[pyo3(signature = (queries, db, k, mask=None, ids=None, *, threads=0, kernel=None))]
#[allow(clippy::too_many_arguments)]
fn hamming_topk<'py>(
    py: Python<'py>,
    queries: PyReadonlyArray2<'py, u8>,
    db: PyReadonlyArray2<'py, u8>,
    k: i64,
    mask: Option<PyReadonlyArray1<'py, bool>>,
    ids: Option<PyReadonlyArray1<'py, i64>>,
    threads: usize,
    kernel: Option<&str>,
) -> PyResult<TopK<'py>> {
    let shape = Shape {
        queries: queries.shape()[0],
        rows: db.shape()[0],
        width: db.shape()[1],
    };
    if queries.shape()[1] != shape.width {
        return Err(CoreError::Value(format!(
            "queries have {} bytes per row but db has {}",
            queries.shape()[1],
            shape.width
        ))
        .into());
    }
    let k = usize::try_from(k).map_err(|_| CoreError::Value(format!("k must be >= 0, got {k}")))?;
    let kernel = kernel.map_or(Ok(Kernel::best()), Kernel::from_name)?;
    let (queries, db) = (slice(&queries, "queries")?, slice(&db, "db")?);
    let mask = mask.as_ref().map(|m| slice(m, "allowed")).transpose()?;
    let ids: Option<Vec<usize>> = match &ids {
        None => None,
        Some(ids) => Some(
            slice(ids, "allowed")?
                .iter()
                .map(|&id| {
                    usize::try_from(id).map_err(|_| {
                        CoreError::Value(format!(
                            "allowed row id {id} is out of range for {} rows",
                            shape.rows
                        ))
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
    };
    let filter = match (mask, &ids) {
        (Some(_), Some(_)) => {
            return Err(CoreError::Value(BOTH_FILTERS.to_owned()).into());
        }
        (Some(mask), None) => Filter::Mask(mask),
        (None, Some(ids)) => Filter::Ids(ids),
        (None, None) => Filter::All,
    };
    let work = db.len() * shape.queries.max(1);
    let result = run(py, work, || {
        crate::hamming::topk(queries, db, shape, k, filter, kernel, threads)
    })?;
    Ok((
        shaped(shape.queries, result.k, result.ids)?.into_pyarray(py),
        shaped(shape.queries, result.k, result.dists)?.into_pyarray(py),
    ))
}

/// The popcount kernels this CPU can run, fastest first.
#[pyfunction]
fn kernels() -> Vec<&'static str> {
    Kernel::available().into_iter().map(Kernel::name).collect()
}

fn digests<'py>(py: Python<'py>, digests: &[hash::Digest]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, digests.iter().map(|d| PyBytes::new(py, d)))
}

#[pyfunction]
fn hash_many<'py>(py: Python<'py>, items: &Bound<'py, PyList>) -> PyResult<Bound<'py, PyList>> {
    let items: Vec<Bound<'py, PyAny>> = items.iter().collect();
    let mut data: Vec<&[u8]> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if let Ok(bytes) = item.cast::<PyBytes>() {
            data.push(bytes.as_bytes());
        } else if let Ok(text) = item.cast::<PyString>() {
            data.push(text.to_str()?.as_bytes());
        } else {
            return Err(PyTypeError::new_err(format!(
                "hash_many items must be bytes or str, got {} at index {i}",
                item.get_type().name()?
            )));
        }
    }
    let total = data.iter().map(|d| d.len()).sum();
    let out = run(py, total, || hash::digest_many(&data));
    digests(py, &out)
}

#[pyfunction]
#[pyo3(signature = (root, paths, *, max_file_size))]
fn hash_files<'py>(
    py: Python<'py>,
    root: std::path::PathBuf,
    paths: Vec<String>,
    max_file_size: u64,
) -> PyResult<Bound<'py, PyList>> {
    let out = py.detach(|| hash::digest_files(&root, &paths, max_file_size));
    PyList::new(
        py,
        out.iter().map(|d| d.as_ref().map(|d| PyBytes::new(py, d))),
    )
}

/// What `read_file` gives: (content, size, mtime_ns), or the walk's name for the refusal.
#[derive(IntoPyObject)]
enum FileRead<'py> {
    Read(Bound<'py, PyBytes>, u64, i64),
    Refused(&'static str),
}

#[pyfunction]
#[pyo3(signature = (root, rel, *, limit, head=None))]
fn read_file<'py>(
    py: Python<'py>,
    root: std::path::PathBuf,
    rel: String,
    limit: u64,
    head: Option<u64>,
) -> FileRead<'py> {
    let read = py.detach(|| {
        let root = crate::platform::open_root(&root).map_err(|_| tree::Refusal::Unreadable)?;
        tree::read_head_in(&root, rel.as_bytes(), limit, head)
    });
    match read {
        Ok(read) => FileRead::Read(PyBytes::new(py, &read.data), read.size, read.mtime_ns),
        Err(refusal) => FileRead::Refused(refusal.reason()),
    }
}

#[pyfunction]
fn folder_names(
    py: Python<'_>,
    root: std::path::PathBuf,
    rel: String,
) -> Option<Vec<std::ffi::OsString>> {
    py.detach(|| {
        let root = crate::platform::open_root(&root).ok()?;
        tree::names_in(&root, rel.as_bytes()).ok()
    })
}

/// Borrowed (key, digest) pairs of a manifest; the keys stay owned by `keys`.
fn entries<'py>(
    manifest: &Bound<'py, PyDict>,
) -> PyResult<Vec<(Bound<'py, PyString>, Bound<'py, PyBytes>)>> {
    manifest
        .iter()
        .map(|(key, digest)| {
            let key = key.cast_into::<PyString>().map_err(|e| {
                PyTypeError::new_err(format!(
                    "diff keys must be str, got {}",
                    type_name(e.into_inner())
                ))
            })?;
            let digest = digest.cast_into::<PyBytes>().map_err(|e| {
                PyTypeError::new_err(format!(
                    "diff digests must be bytes, got {}",
                    type_name(e.into_inner())
                ))
            })?;
            Ok((key, digest))
        })
        .collect()
}

type Entries<'py> = [(Bound<'py, PyString>, Bound<'py, PyBytes>)];

fn borrow<'a>(entries: &'a Entries<'_>) -> PyResult<Vec<(&'a str, &'a [u8])>> {
    entries
        .iter()
        .map(|(k, v)| Ok((k.to_str()?, v.as_bytes())))
        .collect()
}

fn type_name(object: Bound<'_, PyAny>) -> String {
    object
        .get_type()
        .name()
        .map_or_else(|_| "object".to_owned(), |n| n.to_string())
}

type Diff<'py> = (
    Bound<'py, PyList>,
    Bound<'py, PyList>,
    Bound<'py, PyList>,
    Bound<'py, PyList>,
);

#[pyfunction]
fn diff<'py>(
    py: Python<'py>,
    old: &Bound<'py, PyDict>,
    new: &Bound<'py, PyDict>,
) -> PyResult<Diff<'py>> {
    let (old, new) = (entries(old)?, entries(new)?);
    let (old_pairs, new_pairs) = (borrow(&old)?, borrow(&new)?);
    let found = run(py, (old.len() + new.len()) * 64, || {
        manifest::diff(&old_pairs, &new_pairs)
    });
    let keys =
        |source: &Entries<'py>, at: &[usize]| PyList::new(py, at.iter().map(|&i| &source[i].0));
    Ok((
        keys(&new, &found.unchanged)?,
        keys(&new, &found.changed)?,
        keys(&new, &found.added)?,
        keys(&old, &found.removed)?,
    ))
}

/// The default-exclude tables as the walk takes them.
fn defaults(
    dirs: Vec<String>,
    dir_suffixes: Vec<String>,
    files: Vec<String>,
    suffixes: Vec<String>,
    env_markers: Vec<String>,
) -> tree::Defaults {
    tree::Defaults {
        dirs: dirs.into_iter().collect(),
        dir_suffixes,
        files: files.into_iter().collect(),
        suffixes,
        env_markers,
    }
}

/// Candidate files of a tree, (relative path, size, mtime_ns) sorted by path, the skip
/// counts for files and for pruned folders, and the ignore files over `ignore_file_limit`;
/// the default-exclude tables come from the caller.
type WalkResult = (
    Vec<(std::ffi::OsString, u64, i64)>,
    std::collections::HashMap<&'static str, u64>,
    std::collections::HashMap<&'static str, u64>,
    Vec<std::ffi::OsString>,
);

#[pyfunction]
#[pyo3(signature = (root, *, ignore_file_limit, dirs, dir_suffixes, files, suffixes, env_markers))]
#[allow(clippy::too_many_arguments)]
fn walk(
    py: Python<'_>,
    root: std::path::PathBuf,
    ignore_file_limit: u64,
    dirs: Vec<String>,
    dir_suffixes: Vec<String>,
    files: Vec<String>,
    suffixes: Vec<String>,
    env_markers: Vec<String>,
) -> WalkResult {
    let defaults = defaults(dirs, dir_suffixes, files, suffixes, env_markers);
    let out = py.detach(|| tree::walk(&root, &defaults, ignore_file_limit));
    (
        out.files,
        out.skipped,
        out.skipped_dirs,
        out.oversized_ignores,
    )
}

/// A walk compared with the known stat data: new and changed files (path, size, mtime_ns,
/// known before), known paths no longer found, the count of unchanged files, skip counts, and
/// the ignore files over `ignore_file_limit`.
type ChangesResult = (
    Vec<(std::ffi::OsString, u64, i64, bool)>,
    Vec<std::ffi::OsString>,
    u64,
    std::collections::HashMap<&'static str, u64>,
    std::collections::HashMap<&'static str, u64>,
    Vec<std::ffi::OsString>,
);

#[pyfunction]
#[pyo3(signature = (root, known, *, max_file_size, ignore_file_limit, all, dirs, dir_suffixes, files, suffixes, env_markers))]
#[allow(clippy::too_many_arguments)]
fn walk_changes(
    py: Python<'_>,
    root: std::path::PathBuf,
    known: &[u8],
    max_file_size: u64,
    ignore_file_limit: u64,
    all: bool,
    dirs: Vec<String>,
    dir_suffixes: Vec<String>,
    files: Vec<String>,
    suffixes: Vec<String>,
    env_markers: Vec<String>,
) -> PyResult<ChangesResult> {
    let defaults = defaults(dirs, dir_suffixes, files, suffixes, env_markers);
    let out = py.detach(|| {
        let known = tree::parse_known(known)?;
        Ok::<_, CoreError>(tree::changes(
            &root,
            &defaults,
            max_file_size,
            ignore_file_limit,
            &known,
            all,
        ))
    })?;
    Ok((
        out.files,
        out.removed,
        out.unchanged,
        out.skipped,
        out.skipped_dirs,
        out.oversized_ignores,
    ))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(binarize, m)?)?;
    m.add_function(wrap_pyfunction!(quantize_int8, m)?)?;
    m.add_function(wrap_pyfunction!(rescore, m)?)?;
    m.add_function(wrap_pyfunction!(hamming_topk, m)?)?;
    m.add_function(wrap_pyfunction!(kernels, m)?)?;
    m.add_function(wrap_pyfunction!(hash_many, m)?)?;
    m.add_function(wrap_pyfunction!(hash_files, m)?)?;
    m.add_function(wrap_pyfunction!(read_file, m)?)?;
    m.add_function(wrap_pyfunction!(folder_names, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(walk, m)?)?;
    m.add_function(wrap_pyfunction!(walk_changes, m)?)?;
    Ok(())
}
