//! Reading the instrumented crate's Cargo.toml (and, for a dependency inherited with
//! `workspace = true`, its workspace root's) to find a package's name there, once per manifest:
//! a crate with 200 instrumented functions reads its Cargo.toml once per compilation. The answer
//! is kept per manifest path and re-read only when one of the files it came from changes
//! (modification time), for hosts that keep the macro loaded across edits (rust-analyzer's
//! proc-macro server).
//!
//! The workspace root is found as Cargo finds it: the directory `package.workspace` names, else
//! the nearest ancestor directory whose Cargo.toml has a `[workspace]` table.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use crate::manifest::{Manifest, Package};

/// How a crate reaches the package, as its Cargo.toml says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lookup {
    /// The crate is the package (its own tests, examples and doctests).
    Itself,
    /// A dependency under this name, as code writes it (`-` replaced by `_`).
    Name(String),
    /// The manifest (this path) does not depend on the package.
    NotFound(PathBuf),
    /// There is no manifest at the path (a build without Cargo).
    NoManifest,
    /// A manifest could not be read or is not valid TOML (a one-line reason).
    Unreadable { path: PathBuf, reason: String },
}

/// The lookups made so far, by manifest path.
pub(crate) struct Cache {
    package: &'static str,
    entries: Mutex<BTreeMap<PathBuf, Entry>>,
    #[cfg(test)]
    reads: std::sync::atomic::AtomicUsize,
}

struct Entry {
    /// The files the answer was read from, with their modification times then.
    files: Vec<(PathBuf, Option<SystemTime>)>,
    answer: Lookup,
}

fn modified(path: &Path) -> Option<SystemTime> {
    fs::metadata(path).and_then(|metadata| metadata.modified()).ok()
}

impl Cache {
    /// An empty cache for lookups of `package` (as Cargo names it: `notify-core`).
    pub(crate) const fn new(package: &'static str) -> Cache {
        Cache {
            package,
            entries: Mutex::new(BTreeMap::new()),
            #[cfg(test)]
            reads: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// How the crate whose manifest is `manifest` (a Cargo.toml path) reaches the package.
    pub(crate) fn lookup(&self, manifest: &Path) -> Lookup {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = entries.get(manifest) {
            if entry.files.iter().all(|(path, then)| modified(path) == *then) {
                return entry.answer.clone();
            }
        }
        let mut files = Vec::new();
        let answer = self.read(manifest, &mut files);
        entries.insert(
            manifest.to_owned(),
            Entry {
                files,
                answer: answer.clone(),
            },
        );
        answer
    }

    fn read(&self, manifest_path: &Path, files: &mut Vec<(PathBuf, Option<SystemTime>)>) -> Lookup {
        let unreadable = |path: &Path, reason| Lookup::Unreadable {
            path: path.to_owned(),
            reason,
        };
        let manifest = match self.load(manifest_path, files) {
            Ok(Some(manifest)) => manifest,
            Ok(None) => return Lookup::NoManifest,
            Err(reason) => return unreadable(manifest_path, reason),
        };
        if manifest.package_name() == Some(self.package) {
            return Lookup::Itself;
        }
        // The workspace root, read when the first inherited dependency needs it.
        let mut root: Option<Option<Manifest>> = None;
        for dependency in manifest.dependencies() {
            let package = match dependency.package {
                Package::Named(package) => Some(package),
                Package::FromWorkspace if manifest.is_workspace_root() => {
                    manifest.workspace_dependency(&dependency.key)
                }
                Package::FromWorkspace => {
                    if root.is_none() {
                        match self.workspace_root(manifest_path, &manifest, files) {
                            Ok(found) => root = Some(found),
                            Err((path, reason)) => return unreadable(&path, reason),
                        }
                    }
                    root.as_ref()
                        .and_then(|root| root.as_ref()?.workspace_dependency(&dependency.key))
                }
            };
            if package.as_deref() == Some(self.package) {
                return Lookup::Name(dependency.key.replace('-', "_"));
            }
        }
        Lookup::NotFound(manifest_path.to_owned())
    }

    /// The manifest at `path`; `None` when there is no file.
    fn load(&self, path: &Path, files: &mut Vec<(PathBuf, Option<SystemTime>)>) -> Result<Option<Manifest>, String> {
        files.push((path.to_owned(), modified(path)));
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error.to_string()),
        };
        #[cfg(test)]
        self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Manifest::parse(&text).map(Some)
    }

    fn workspace_root(
        &self,
        manifest_path: &Path,
        manifest: &Manifest,
        files: &mut Vec<(PathBuf, Option<SystemTime>)>,
    ) -> Result<Option<Manifest>, (PathBuf, String)> {
        let Some(dir) = manifest_path.parent() else {
            return Ok(None);
        };
        if let Some(relative) = manifest.workspace_path() {
            let path = dir.join(relative).join("Cargo.toml");
            return self.load(&path, files).map_err(|reason| (path, reason));
        }
        for ancestor in dir.ancestors().skip(1) {
            let path = ancestor.join("Cargo.toml");
            if !path.is_file() {
                continue;
            }
            match self.load(&path, files) {
                Ok(Some(root)) if root.is_workspace_root() => return Ok(Some(root)),
                Ok(_) => {}
                Err(reason) => return Err((path, reason)),
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::Ordering;
    use std::time::{Duration, SystemTime};

    use super::{Cache, Lookup};

    /// A directory of manifests for one test, removed when dropped.
    struct Tree(PathBuf);

    impl Tree {
        fn new(name: &str) -> Tree {
            let dir = std::env::temp_dir().join(format!("notify-macros-lookup-{}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Tree(dir)
        }

        fn write(&self, relative: &str, text: &str) -> PathBuf {
            let path = self.0.join(relative);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, text).unwrap();
            path
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    const ROOT: &str = "[workspace]\nmembers = [\"crates/*\"]\n\n[workspace.dependencies]\nncw = { package = \"notify-core\", path = \"notify-core\" }\nserde = \"1\"\n";
    const MEMBER: &str = "[package]\nname = \"member\"\n\n[dependencies]\nserde.workspace = true\nncw = { workspace = true, features = [\"testing\"] }\n";

    #[test]
    fn a_rename_inherited_from_the_workspace_root_above() {
        let tree = Tree::new("inherited");
        tree.write("Cargo.toml", ROOT);
        // A manifest between the member and the root that is not a workspace root is passed over.
        tree.write("crates/Cargo.toml", "[package]\nname = \"between\"\n");
        let member = tree.write("crates/member/Cargo.toml", MEMBER);
        assert_eq!(Cache::new("notify-core").lookup(&member), Lookup::Name("ncw".into()));
    }

    #[test]
    fn the_root_named_by_package_workspace() {
        let tree = Tree::new("package-workspace");
        tree.write("elsewhere/Cargo.toml", ROOT);
        tree.write("Cargo.toml", "[workspace]\n");
        let member = tree.write(
            "member/Cargo.toml",
            &MEMBER.replace("name = \"member\"", "name = \"member\"\nworkspace = \"../elsewhere\""),
        );
        assert_eq!(Cache::new("notify-core").lookup(&member), Lookup::Name("ncw".into()));
    }

    #[test]
    fn a_root_package_inheriting_from_its_own_workspace_table() {
        let tree = Tree::new("root-package");
        let root = tree.write(
            "Cargo.toml",
            &format!("{ROOT}\n[package]\nname = \"app\"\n[dev-dependencies]\nncw.workspace = true\n"),
        );
        assert_eq!(Cache::new("notify-core").lookup(&root), Lookup::Name("ncw".into()));
    }

    #[test]
    fn itself_not_found_no_manifest_and_invalid() {
        let tree = Tree::new("outcomes");
        let cache = Cache::new("notify-core");
        let itself = tree.write(
            "core/Cargo.toml",
            "[package]\nname = \"notify-core\"\n[dev-dependencies]\nnotify-core = { path = \".\" }\n",
        );
        assert_eq!(cache.lookup(&itself), Lookup::Itself);
        let plain = tree.write("plain/Cargo.toml", "[dependencies]\nnotify-core = \"0.1\"\n");
        assert_eq!(cache.lookup(&plain), Lookup::Name("notify_core".into()));
        let without = tree.write(
            "without/Cargo.toml",
            "[dependencies]\nfacade = \"1\"\n[build-dependencies]\nnotify-core = \"0.1\"\n",
        );
        assert_eq!(cache.lookup(&without), Lookup::NotFound(without.clone()));
        // Inherited, but the root has no entry for it (or there is no root): not found.
        let orphan = tree.write("orphan/Cargo.toml", "[dependencies]\nnotify-core.workspace = true\n");
        assert_eq!(cache.lookup(&orphan), Lookup::NotFound(orphan.clone()));
        assert_eq!(cache.lookup(&tree.0.join("absent/Cargo.toml")), Lookup::NoManifest);
        let invalid = tree.write("invalid/Cargo.toml", "[dependencies\n");
        let Lookup::Unreadable { path, reason } = cache.lookup(&invalid) else {
            panic!()
        };
        assert_eq!(path, invalid);
        assert!(reason.starts_with("invalid TOML at line 1, column "), "{reason}");
    }

    #[test]
    fn each_manifest_is_read_once_for_many_lookups() {
        let tree = Tree::new("once");
        tree.write("Cargo.toml", ROOT);
        let member = tree.write("crates/member/Cargo.toml", MEMBER);
        let cache = Cache::new("notify-core");
        for _ in 0..200 {
            assert_eq!(cache.lookup(&member), Lookup::Name("ncw".into()));
        }
        // The member's manifest and the root's.
        assert_eq!(cache.reads.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_changed_manifest_is_read_again() {
        let tree = Tree::new("changed");
        tree.write("Cargo.toml", ROOT);
        let member = tree.write("crates/member/Cargo.toml", MEMBER);
        let cache = Cache::new("notify-core");
        assert_eq!(cache.lookup(&member), Lookup::Name("ncw".into()));
        let root = tree.write("Cargo.toml", &ROOT.replace("ncw = {", "other = {"));
        touch(&root);
        assert_eq!(cache.lookup(&member), Lookup::NotFound(member.clone()));
        tree.write(
            "crates/member/Cargo.toml",
            "[dependencies]\nnc = { package = \"notify-core\" }\n",
        );
        touch(&member);
        assert_eq!(cache.lookup(&member), Lookup::Name("nc".into()));
        assert_eq!(cache.reads.load(Ordering::Relaxed), 5);
    }

    /// A modification time clearly after the last one (file systems with coarse times).
    fn touch(path: &Path) {
        let file = fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() + Duration::from_secs(10)).unwrap();
    }
}
