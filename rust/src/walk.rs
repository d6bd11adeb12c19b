//! The file walk: which files of a project tree get indexed, by the same rules and in the same
//! order as the Python reference walk (`kenning/sources.py`, whose docstring states the rules).
//!
//! Rules, strongest first: `.kenningignore` files (deepest folder first; a match decides),
//! default excludes by name and virtualenv markers, `.gitignore` files (deepest first), then
//! `.git/info/exclude` of the root. Git's global excludes are not read. A pattern in a folder's
//! file is matched against the path relative to that folder, first the path itself, then its
//! parent folders (so `dist/` or `!dist/` also decides what lies inside `dist`). Ignored folders
//! are pruned. Symlinks are followed only when they resolve inside the root; a folder already
//! open higher up (a loop) is not entered again. Unreadable entries are counted and skipped.
//!
//! The walk yields (relative path, size, mtime in ns) of every candidate file, sorted by path;
//! the binary sniff and the language are the caller's. `changes` compares a walk with the stat
//! data of the files indexed before and keeps only what differs, so a refresh of an unchanged
//! tree hands the caller nothing to look at.

use std::collections::{HashMap, HashSet};
use std::ffi::{CString, OsStr, OsString};
use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

use crate::error::{value_error, CoreResult};
use crate::parallel;

const IGNORE_FILE: &str = ".gitignore";
const KENNING_IGNORE_FILE: &str = ".kenningignore";

/// The default-exclude tables, passed in by the Python layer so one list rules both walks.
#[derive(Debug, Clone, Default)]
pub struct Defaults {
    pub dirs: HashSet<String>,
    pub dir_suffixes: Vec<String>,
    pub files: HashSet<String>,
    pub suffixes: Vec<String>,
    pub env_markers: Vec<String>,
}

impl Defaults {
    fn excluded(&self, name: &OsStr, is_dir: bool) -> bool {
        let (names, suffixes) = if is_dir {
            (&self.dirs, &self.dir_suffixes)
        } else {
            (&self.files, &self.suffixes)
        };
        name.to_str().is_some_and(|n| names.contains(n))
            || suffixes
                .iter()
                .any(|x| name.as_bytes().ends_with(x.as_bytes()))
    }
}

/// What a walk found: candidate files sorted by path, and what it left out by reason.
#[derive(Debug, Default)]
pub struct WalkOutput {
    pub files: Vec<(OsString, u64, i64)>,
    pub skipped: HashMap<&'static str, u64>,
    pub skipped_dirs: HashMap<&'static str, u64>,
}

/// The ignore files of one folder; `prefix` is the folder relative to the root.
struct Rules {
    prefix: PathBuf,
    git: Option<Gitignore>,
    kenning: Option<Gitignore>,
}

#[derive(Clone, Copy)]
enum Kind {
    Git,
    Kenning,
}

fn read_spec(dir: &Path, file: &Path) -> Option<Gitignore> {
    let bytes = fs::read(file).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut builder = GitignoreBuilder::new(dir);
    for line in text.lines() {
        // a malformed pattern is one line lost, never the whole file
        let _ = builder.add_line(None, line);
    }
    let spec = builder.build().ok()?;
    (!spec.is_empty()).then_some(spec)
}

fn verdict(spec: &Gitignore, sub: &Path, is_dir: bool) -> Option<bool> {
    let direct = spec.matched(sub, is_dir);
    let found = if direct.is_none() {
        sub.ancestors()
            .skip(1)
            .take_while(|p| !p.as_os_str().is_empty())
            .map(|p| spec.matched(p, true))
            .find(|m| !m.is_none())
            .unwrap_or(Match::None)
    } else {
        direct
    };
    match found {
        Match::None => None,
        Match::Ignore(_) => Some(true),
        Match::Whitelist(_) => Some(false),
    }
}

/// True = ignored, false = explicitly kept, None = no rule matched; the deepest folder wins.
fn decide(stack: &[Arc<Rules>], rel: &Path, is_dir: bool, kind: Kind) -> Option<bool> {
    stack.iter().rev().find_map(|rules| {
        let spec = match kind {
            Kind::Git => rules.git.as_ref(),
            Kind::Kenning => rules.kenning.as_ref(),
        }?;
        let sub = rel.strip_prefix(&rules.prefix).ok()?;
        verdict(spec, sub, is_dir)
    })
}

struct Row {
    name: OsString,
    is_dir: bool,
    is_link: bool,
}

/// The name, with a trailing '/' for a folder: "a.txt" < "a/b", so the output is sorted by path.
fn sort_key(row: &Row) -> impl Iterator<Item = &u8> {
    row.name
        .as_bytes()
        .iter()
        .chain(row.is_dir.then_some(&b'/'))
}

/// The sort key as Python orders the name: code points, with each byte that is not UTF-8 read
/// as the lone surrogate U+DC00+byte (`os.fsdecode`). Only names that are not UTF-8 need it.
fn code_points(row: &Row) -> Vec<u32> {
    let mut out = Vec::with_capacity(row.name.len() + 1);
    for chunk in row.name.as_bytes().utf8_chunks() {
        out.extend(chunk.valid().chars().map(u32::from));
        out.extend(chunk.invalid().iter().map(|&b| 0xDC00 + u32::from(b)));
    }
    if row.is_dir {
        out.push(u32::from(b'/'));
    }
    out
}

struct Folder {
    dir: usize, // index into `Walker::dirs`
    prefix: PathBuf,
    rules: Vec<Arc<Rules>>,
    ancestors: Vec<(u64, u64)>,
    rows: std::vec::IntoIter<Row>,
}

struct Walker<'a> {
    root: PathBuf,
    defaults: &'a Defaults,
    out: WalkOutput,
    pending: Vec<Pending>,
    dirs: Vec<PathBuf>, // every folder opened, by index
}

struct Pending {
    rel: OsString,
    dir: usize, // index into `Walker::dirs`
    name: CString,
    is_link: bool,
}

/// What a file's stat says: (size, mtime_ns), not a regular file, or unreadable.
enum Stat {
    File(u64, i64),
    Other,
    Unreadable,
}

/// `fstatat` relative to the open folder: the kernel resolves one name, not the whole path.
fn stat_at(dir: &fs::File, file: &Pending) -> Stat {
    let flags = if file.is_link {
        0
    } else {
        libc::AT_SYMLINK_NOFOLLOW
    };
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: a valid folder descriptor, a NUL-terminated name and room for one `stat`.
    let rc = unsafe { libc::fstatat(dir.as_raw_fd(), file.name.as_ptr(), st.as_mut_ptr(), flags) };
    if rc != 0 {
        let dangling = std::io::Error::last_os_error().kind() == std::io::ErrorKind::NotFound;
        return if file.is_link && dangling {
            Stat::Other
        } else {
            Stat::Unreadable
        };
    }
    // SAFETY: fstatat succeeded, so it filled `st`.
    let st = unsafe { st.assume_init() };
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Stat::Other; // a fifo, socket or device: not a file to read
    }
    Stat::File(
        st.st_size as u64,
        st.st_mtime * 1_000_000_000 + st.st_mtime_nsec,
    )
}

/// Stats of `files` in order, opening each folder once per run of its files.
fn stat_run(dirs: &[PathBuf], files: &[Pending]) -> Vec<Stat> {
    let mut open: Option<(usize, std::io::Result<fs::File>)> = None;
    files
        .iter()
        .map(|file| {
            if open.as_ref().map(|(dir, _)| *dir) != Some(file.dir) {
                open = Some((file.dir, fs::File::open(&dirs[file.dir])));
            }
            match open.as_ref().map(|(_, dir)| dir) {
                Some(Ok(dir)) => stat_at(dir, file),
                _ => Stat::Unreadable,
            }
        })
        .collect()
}

/// Stats of every file, in order; one thread per ~2,000 files (stat is most of a walk's time).
fn stat_all(dirs: &[PathBuf], files: &[Pending]) -> Vec<Stat> {
    let threads = parallel::threads_for(files.len(), 2000);
    if threads == 1 {
        return stat_run(dirs, files);
    }
    std::thread::scope(|scope| {
        let parts: Vec<_> = parallel::split(files.len(), threads)
            .into_iter()
            .map(|range| scope.spawn(move || stat_run(dirs, &files[range])))
            .collect();
        parts
            .into_iter()
            .flat_map(|part| part.join().expect("stat does not panic"))
            .collect()
    })
}

fn bump(counts: &mut HashMap<&'static str, u64>, reason: &'static str) {
    *counts.entry(reason).or_insert(0) += 1;
}

/// `path` with `.` and `..` resolved by name only (for a symlink whose target is missing).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

impl Walker<'_> {
    fn inside_root(&self, path: &Path) -> bool {
        let real = match fs::canonicalize(path) {
            Ok(real) => real,
            // dangling: judge where it points (it yields nothing either way)
            Err(_) => match fs::read_link(path) {
                Ok(target) => lexical(&path.parent().unwrap_or(Path::new("/")).join(target)),
                Err(_) => return true,
            },
        };
        real.starts_with(&self.root)
    }

    fn skip_reason(
        &self,
        stack: &[Arc<Rules>],
        rel: &Path,
        name: &OsStr,
        is_dir: bool,
    ) -> Option<&'static str> {
        if let Some(ignored) = decide(stack, rel, is_dir, Kind::Kenning) {
            return ignored.then_some("ignored");
        }
        if self.defaults.excluded(name, is_dir) {
            return Some("default");
        }
        decide(stack, rel, is_dir, Kind::Git)
            .unwrap_or(false)
            .then_some("ignored")
    }

    fn open(
        &mut self,
        abs_dir: &Path,
        prefix: PathBuf,
        rules: &[Arc<Rules>],
        ancestors: &[(u64, u64)],
    ) -> Option<Folder> {
        let key = match fs::metadata(abs_dir) {
            Ok(st) => (st.dev(), st.ino()),
            Err(_) => {
                bump(&mut self.out.skipped_dirs, "unreadable");
                return None;
            }
        };
        if ancestors.contains(&key) {
            // a symlink back up the tree: walking it again never ends
            bump(&mut self.out.skipped_dirs, "symlink");
            return None;
        }
        let listing = fs::read_dir(abs_dir).and_then(|it| {
            it.map(|entry| entry.map(|e| (e.file_name(), e)))
                .collect::<std::io::Result<Vec<_>>>()
        });
        let entries = match listing {
            Ok(entries) => entries,
            Err(_) => {
                bump(&mut self.out.skipped_dirs, "unreadable");
                return None;
            }
        };
        let has = |name: &str| entries.iter().any(|(n, _)| n == name);
        let is_env =
            !prefix.as_os_str().is_empty() && self.defaults.env_markers.iter().any(|m| has(m));
        if is_env && decide(rules, &prefix, true, Kind::Kenning) != Some(false) {
            bump(&mut self.out.skipped_dirs, "default"); // a virtualenv, whatever its name
            return None;
        }
        let mut rules = rules.to_vec();
        let (has_git, has_ken) = (has(IGNORE_FILE), has(KENNING_IGNORE_FILE));
        if has_git || has_ken {
            let git = has_git
                .then(|| read_spec(abs_dir, &abs_dir.join(IGNORE_FILE)))
                .flatten();
            let kenning = has_ken
                .then(|| read_spec(abs_dir, &abs_dir.join(KENNING_IGNORE_FILE)))
                .flatten();
            if git.is_some() || kenning.is_some() {
                rules.push(Arc::new(Rules {
                    prefix: prefix.clone(),
                    git,
                    kenning,
                }));
            }
        }
        let mut rows = Vec::with_capacity(entries.len());
        for (name, entry) in entries {
            let Ok(file_type) = entry.file_type() else {
                bump(&mut self.out.skipped, "unreadable");
                continue;
            };
            let is_link = file_type.is_symlink();
            let is_dir = if is_link {
                match fs::metadata(entry.path()) {
                    Ok(st) => st.is_dir(),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                    Err(_) => {
                        bump(&mut self.out.skipped, "unreadable");
                        continue;
                    }
                }
            } else {
                file_type.is_dir()
            };
            rows.push(Row {
                name,
                is_dir,
                is_link,
            });
        }
        if rows.iter().all(|row| row.name.to_str().is_some()) {
            rows.sort_unstable_by(|a, b| sort_key(a).cmp(sort_key(b))); // UTF-8 keeps code point order
        } else {
            rows.sort_by_cached_key(code_points);
        }
        let mut ancestors = ancestors.to_vec();
        ancestors.push(key);
        self.dirs.push(abs_dir.to_path_buf());
        Some(Folder {
            dir: self.dirs.len() - 1,
            prefix,
            rules,
            ancestors,
            rows: rows.into_iter(),
        })
    }

    /// A candidate file, stat-ed later with the others (in parallel).
    fn file(&mut self, folder: usize, row: &Row, rel: PathBuf) {
        let Ok(name) = CString::new(row.name.as_bytes()) else {
            return; // a name with a NUL byte cannot exist on disk
        };
        self.pending.push(Pending {
            rel: rel.into_os_string(),
            dir: folder,
            name,
            is_link: row.is_link,
        });
    }

    fn run(&mut self, base: Vec<Arc<Rules>>) {
        let root = self.root.clone();
        let mut stack: Vec<Folder> = self
            .open(&root, PathBuf::new(), &base, &[])
            .into_iter()
            .collect();
        while let Some(folder) = stack.last_mut() {
            let Some(row) = folder.rows.next() else {
                stack.pop();
                continue;
            };
            let rel = folder.prefix.join(&row.name);
            let mut reason = self.skip_reason(&folder.rules, &rel, &row.name, row.is_dir);
            let path = || self.dirs[folder.dir].join(&row.name);
            if reason.is_none() && row.is_link && !self.inside_root(&path()) {
                reason = Some("symlink");
            }
            if let Some(reason) = reason {
                bump(
                    if row.is_dir {
                        &mut self.out.skipped_dirs
                    } else {
                        &mut self.out.skipped
                    },
                    reason,
                );
            } else if row.is_dir {
                let (rules, ancestors) = (folder.rules.clone(), folder.ancestors.clone());
                let path = path();
                if let Some(inner) = self.open(&path, rel, &rules, &ancestors) {
                    stack.push(inner);
                }
            } else {
                let dir = folder.dir;
                self.file(dir, &row, rel);
            }
        }
    }
}

/// Walk `root` (resolved to its real path) and return the candidate files sorted by path.
pub fn walk(root: &Path, defaults: &Defaults) -> WalkOutput {
    let root = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    // .git/info/exclude sits below every .gitignore: a root-level layer under them
    let exclude = read_spec(&root, &root.join(".git").join("info").join("exclude"));
    let base = exclude
        .map(|git| {
            Arc::new(Rules {
                prefix: PathBuf::new(),
                git: Some(git),
                kenning: None,
            })
        })
        .into_iter()
        .collect();
    let mut walker = Walker {
        root,
        defaults,
        out: WalkOutput::default(),
        pending: Vec::new(),
        dirs: Vec::new(),
    };
    walker.run(base);
    let mut out = walker.out;
    let stats = stat_all(&walker.dirs, &walker.pending);
    out.files.reserve(stats.len());
    for (file, st) in walker.pending.into_iter().zip(stats) {
        match st {
            Stat::File(size, mtime_ns) => out.files.push((file.rel, size, mtime_ns)),
            Stat::Other => {}
            Stat::Unreadable => bump(&mut out.skipped, "unreadable"),
        }
    }
    out
}

/// The stat data of the files indexed before: path -> (size, mtime_ns).
pub type Known<'a> = HashMap<&'a [u8], (u64, i64)>;

/// Parses `path\0size\0mtime_ns` records joined by `\0` (SQLite's `group_concat` of the files
/// table; empty for none). Paths cannot hold a NUL byte, so the separator is unambiguous.
pub fn parse_known(blob: &[u8]) -> CoreResult<Known<'_>> {
    let mut known = HashMap::new();
    if blob.is_empty() {
        return Ok(known);
    }
    let mut fields = blob.split(|&b| b == 0);
    while let Some(path) = fields.next() {
        let (Some(size), Some(mtime)) = (fields.next(), fields.next()) else {
            return value_error("known stat data: a record lacks its size or mtime");
        };
        let (Some(size), Some(mtime)) = (number::<u64>(size), number::<i64>(mtime)) else {
            return value_error("known stat data: a size or mtime is not a number");
        };
        known.insert(path, (size, mtime));
    }
    Ok(known)
}

fn number<T: std::str::FromStr>(digits: &[u8]) -> Option<T> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// A walk compared with the files indexed before.
#[derive(Debug, Default)]
pub struct Changes {
    /// (path, size, mtime_ns, known before) of new and changed files (of every file when the
    /// caller asks for all), sorted by path.
    pub files: Vec<(OsString, u64, i64, bool)>,
    /// Known paths that are no candidate any more (deleted, now ignored, now too large), sorted.
    pub removed: Vec<OsString>,
    /// Candidate files whose size and mtime are the known ones.
    pub unchanged: u64,
    pub skipped: HashMap<&'static str, u64>,
    pub skipped_dirs: HashMap<&'static str, u64>,
}

/// Walk `root` and compare each candidate file no larger than `max_file_size` with `known`;
/// `all` returns unchanged files too (a full refresh), still flagged as known.
pub fn changes(
    root: &Path,
    defaults: &Defaults,
    max_file_size: u64,
    mut known: Known<'_>,
    all: bool,
) -> Changes {
    let walked = walk(root, defaults);
    let mut out = Changes {
        skipped: walked.skipped,
        skipped_dirs: walked.skipped_dirs,
        ..Changes::default()
    };
    for (path, size, mtime_ns) in walked.files {
        if size > max_file_size {
            bump(&mut out.skipped, "too_large");
            continue;
        }
        let stamp = known.remove(path.as_bytes());
        if stamp == Some((size, mtime_ns)) && !all {
            out.unchanged += 1;
        } else {
            out.files.push((path, size, mtime_ns, stamp.is_some()));
        }
    }
    let mut removed: Vec<&[u8]> = known.into_keys().collect();
    removed.sort_unstable();
    out.removed = removed
        .into_iter()
        .map(|p| OsStr::from_bytes(p).to_os_string())
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Defaults {
        fn builtin() -> Self {
            let own = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
            Defaults {
                dirs: own(&[".git", "node_modules", "dist", "__pycache__"])
                    .into_iter()
                    .collect(),
                dir_suffixes: own(&[".egg-info"]),
                files: own(&["Cargo.lock", ".git"]).into_iter().collect(),
                suffixes: own(&[".min.js", ".map"]),
                env_markers: own(&["pyvenv.cfg", "conda-meta"]),
            }
        }
    }

    fn tree(files: &[(&str, &str)]) -> tempdir::TempDir {
        let dir = tempdir::TempDir::new();
        for (rel, text) in files {
            let path = dir.path().join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        dir
    }

    fn paths(dir: &Path) -> Vec<String> {
        walk(dir, &Defaults::builtin())
            .files
            .into_iter()
            .map(|(p, _, _)| p.to_string_lossy().into_owned())
            .collect()
    }

    /// A throwaway directory under the system temp dir, removed on drop.
    mod tempdir {
        use std::path::{Path, PathBuf};
        use std::sync::atomic::{AtomicU64, Ordering};

        pub struct TempDir(PathBuf);
        static NEXT: AtomicU64 = AtomicU64::new(0);

        impl TempDir {
            pub fn new() -> Self {
                let n = NEXT.fetch_add(1, Ordering::Relaxed);
                let path =
                    std::env::temp_dir().join(format!("kenning-walk-{}-{n}", std::process::id()));
                let _ = std::fs::remove_dir_all(&path);
                std::fs::create_dir_all(&path).unwrap();
                TempDir(path)
            }
            pub fn path(&self) -> &Path {
                &self.0
            }
        }
        impl Drop for TempDir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn sorted_by_path_with_sizes() {
        let dir = tree(&[
            ("b.py", "x = 1\n"),
            ("a/z.go", "package a\n"),
            ("a.txt", "hi\n"),
            ("a/b/c.rs", ""),
        ]);
        let out = walk(dir.path(), &Defaults::builtin());
        let got: Vec<_> = out
            .files
            .iter()
            .map(|(p, s, _)| (p.to_string_lossy().into_owned(), *s))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a.txt".into(), 3),
                ("a/b/c.rs".into(), 0),
                ("a/z.go".into(), 10),
                ("b.py".into(), 6)
            ]
        );
    }

    #[test]
    fn nested_gitignore_negation_and_info_exclude() {
        let dir = tree(&[
            (".gitignore", "*.log\n/generated/\n"),
            (".git/info/exclude", "secret.py\n"),
            ("app.py", ""),
            ("debug.log", ""),
            ("secret.py", ""),
            ("generated/out.py", ""),
            ("pkg/.gitignore", "!keep.log\ntmp_*\n"),
            ("pkg/keep.log", ""),
            ("pkg/other.log", ""),
            ("pkg/tmp_x.py", ""),
            ("pkg/generated/inner.py", ""),
            ("other/tmp_y.py", ""),
        ]);
        assert_eq!(
            paths(dir.path()),
            [
                ".gitignore",
                "app.py",
                "other/tmp_y.py",
                "pkg/.gitignore",
                "pkg/generated/inner.py",
                "pkg/keep.log"
            ]
        );
    }

    #[test]
    fn kenningignore_decides_before_defaults_and_gitignore() {
        let dir = tree(&[
            (".gitignore", "*.js\ndocs/\n"),
            (
                ".kenningignore",
                "!dist/\n!docs/\n!Cargo.lock\nvendor/drop.py\n",
            ),
            ("dist/bundle.js", "x"),
            ("docs/guide.md", "x"),
            ("Cargo.lock", "x"),
            ("node_modules/x.js", "x"),
            ("vendor/drop.py", "x"),
            ("vendor/keep.py", "x"),
            ("env/pyvenv.cfg", "x"),
            ("env/lib.py", "x"),
        ]);
        let out = walk(dir.path(), &Defaults::builtin());
        let got: Vec<_> = out
            .files
            .iter()
            .map(|(p, _, _)| p.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            got,
            [
                ".gitignore",
                ".kenningignore",
                "Cargo.lock",
                "dist/bundle.js",
                "docs/guide.md",
                "vendor/keep.py"
            ]
        );
        assert_eq!(out.skipped_dirs.get("default"), Some(&2)); // node_modules and the virtualenv
        assert_eq!(out.skipped.get("ignored"), Some(&1));
    }

    #[test]
    fn symlinks_inside_followed_loops_and_escapes_skipped() {
        let base = tempdir::TempDir::new();
        let root = base.path().join("repo");
        let outside = base.path().join("outside");
        fs::create_dir_all(root.join("src")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(root.join("src/a.py"), "a\n").unwrap();
        fs::write(outside.join("secret.py"), "s\n").unwrap();
        use std::os::unix::fs::symlink;
        symlink(root.join("src"), root.join("src/loop")).unwrap();
        symlink(&root, root.join("up")).unwrap();
        symlink(&outside, root.join("escape")).unwrap();
        symlink(outside.join("secret.py"), root.join("escape.py")).unwrap();
        symlink(root.join("src/a.py"), root.join("alias.py")).unwrap();
        symlink(root.join("missing.py"), root.join("dangling.py")).unwrap();
        let out = walk(&root, &Defaults::builtin());
        let got: Vec<_> = out
            .files
            .iter()
            .map(|(p, _, _)| p.to_string_lossy().into_owned())
            .collect();
        assert_eq!(got, ["alias.py", "src/a.py"]);
        assert_eq!(out.skipped.get("symlink"), Some(&1));
        assert_eq!(out.skipped_dirs.get("symlink"), Some(&3));
    }

    #[test]
    fn names_that_are_not_utf8_sort_as_python_decodes_them() {
        use std::os::unix::ffi::OsStringExt;
        let dir = tree(&[("b.py", ""), ("a\u{e9}.py", ""), ("a\u{fffd}.py", "")]);
        fs::write(
            dir.path().join(OsString::from_vec(b"a\xff.py".to_vec())),
            "",
        )
        .unwrap();
        let got: Vec<Vec<u8>> = walk(dir.path(), &Defaults::builtin())
            .files
            .into_iter()
            .map(|(p, _, _)| p.into_vec())
            .collect();
        // U+00E9 < U+DCFF (the byte 0xFF) < U+FFFD
        let want: Vec<&[u8]> = vec![b"a\xc3\xa9.py", b"a\xff.py", b"a\xef\xbf\xbd.py", b"b.py"];
        assert_eq!(got, want);
    }

    #[test]
    fn known_stat_data_parses_and_rejects_broken_records() {
        let known = parse_known(b"a.py\x003\x00-5\x00b/c.rs\x000\x0017").unwrap();
        assert_eq!(known.get(&b"a.py"[..]), Some(&(3, -5)));
        assert_eq!(known.get(&b"b/c.rs"[..]), Some(&(0, 17)));
        assert!(parse_known(b"").unwrap().is_empty());
        for broken in [&b"a.py\x003"[..], b"a.py\x00x\x001", b"a.py\x001\x00"] {
            assert!(parse_known(broken).is_err());
        }
    }

    #[test]
    fn changes_keep_only_what_differs_from_the_known_stat_data() {
        let dir = tree(&[
            ("same.py", "x\n"),
            ("edited.py", "x\n"),
            ("new.py", "x\n"),
            ("big.py", "xxxxxxxxxx\n"),
        ]);
        let stamp = |name: &str| {
            let st = fs::metadata(dir.path().join(name)).unwrap();
            format!(
                "{name}\0{}\0{}",
                st.size(),
                st.mtime_nsec() + st.mtime() * 1_000_000_000
            )
        };
        let blob = [
            stamp("same.py"),
            "edited.py\x001\x000".into(),
            stamp("big.py"),
            "gone.py\x001\x001".into(),
        ]
        .join("\0");
        let known = || parse_known(blob.as_bytes()).unwrap();
        let out = changes(dir.path(), &Defaults::builtin(), 5, known(), false);
        let files: Vec<_> = out
            .files
            .iter()
            .map(|(p, _, _, was)| (p.to_string_lossy().into_owned(), *was))
            .collect();
        assert_eq!(
            files,
            [("edited.py".into(), true), ("new.py".into(), false)]
        );
        assert_eq!(out.removed, ["big.py", "gone.py"]); // too large now, and deleted
        assert_eq!(out.unchanged, 1);
        assert_eq!(out.skipped.get("too_large"), Some(&1));
        let every = changes(dir.path(), &Defaults::builtin(), 5, known(), true);
        assert_eq!(every.files.len(), 3);
        assert_eq!(every.unchanged, 0);
    }

    #[test]
    fn unreadable_ignore_file_is_no_rule() {
        let dir = tree(&[("a.py", "x")]);
        fs::create_dir(dir.path().join(".gitignore")).unwrap();
        assert_eq!(paths(dir.path()), ["a.py"]);
    }
}
