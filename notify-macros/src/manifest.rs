//! The one fact the attribute needs from a Cargo.toml: the name under which the crate depends on
//! a package (notify-core). A manifest is read into its keys, each by its full dotted path
//! (`dependencies.nc.package`) with its value when that is a string or a boolean; tables, arrays
//! and other values are kept only as "defined". Parsed with `toml_parser`, the lexer and push
//! parser of the `toml` crates (about 1.4 s of compile time, against about 21 s for the
//! `toml_edit` stack behind `proc-macro-crate`; docs/build-time.md).
//!
//! What counts as a dependency, in this order of preference (the first table that names the
//! package wins, so a name visible to every target of the crate is preferred over one only its
//! tests see): `[dependencies]`, `[target.'…'.dependencies]`, `[dev-dependencies]`,
//! `[target.'…'.dev-dependencies]` (`dev_dependencies` too). Build dependencies are not visible to
//! the crate's code and do not count.

use toml_parser::decoder::ScalarKind;
use toml_parser::parser::{parse_document, Event, EventKind, RecursionGuard};
use toml_parser::{ParseError, Source};

/// Nesting deeper than this (inline tables and arrays) is refused as invalid; Cargo's own parser
/// has a limit of the same order.
const MAX_DEPTH: u32 = 128;

/// A parsed Cargo.toml: its keys in document order.
#[derive(Debug)]
pub(crate) struct Manifest {
    keys: Vec<(Vec<String>, Value)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Text(String),
    Bool(bool),
    /// A table, an array, a number or a date.
    Other,
}

/// A dependency of a manifest: the name the crate's code uses (`key`, with `-` as written) and
/// what it refers to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dependency {
    pub(crate) key: String,
    pub(crate) package: Package,
}

/// The package a dependency refers to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Package {
    /// `package = "…"`, or the key itself.
    Named(String),
    /// `workspace = true`: the workspace root's `[workspace.dependencies]` entry of the same key
    /// says.
    FromWorkspace,
}

impl Manifest {
    /// Parses a manifest's text; the error is one line: what is wrong and where (line:column).
    pub(crate) fn parse(text: &str) -> Result<Manifest, String> {
        let source = Source::new(text);
        let tokens = source.lex().into_vec();
        let mut events: Vec<Event> = Vec::new();
        let mut errors: Vec<ParseError> = Vec::new();
        parse_document(&tokens, &mut RecursionGuard::new(&mut events, MAX_DEPTH), &mut errors);
        let mut walker = Walker {
            source,
            events: events.into_iter().filter(|event| {
                !matches!(
                    event.kind(),
                    EventKind::Whitespace | EventKind::Comment | EventKind::Newline
                )
            }),
            keys: Vec::new(),
            errors,
        };
        if walker.errors.is_empty() {
            walker.document();
        }
        match walker.errors.first() {
            Some(error) => Err(describe(text, error)),
            None => Ok(Manifest { keys: walker.keys }),
        }
    }

    fn text(&self, path: &[&str]) -> Option<&str> {
        self.keys.iter().find_map(|(key, value)| match value {
            Value::Text(text) if key.iter().map(String::as_str).eq(path.iter().copied()) => Some(text.as_str()),
            _ => None,
        })
    }

    /// `[package] name`.
    pub(crate) fn package_name(&self) -> Option<&str> {
        self.text(&["package", "name"])
    }

    /// `[package] workspace`: the path of the workspace root's directory, when given.
    pub(crate) fn workspace_path(&self) -> Option<&str> {
        self.text(&["package", "workspace"])
    }

    /// Whether this manifest has a `[workspace]` table (is a workspace root).
    pub(crate) fn is_workspace_root(&self) -> bool {
        self.keys.iter().any(|(key, _)| key[0] == "workspace")
    }

    /// The package that the root's `[workspace.dependencies]` entry `key` refers to (its
    /// `package = "…"`, else the key); `None` when there is no such entry.
    pub(crate) fn workspace_dependency(&self, key: &str) -> Option<String> {
        let mut defined = false;
        for (path, value) in &self.keys {
            if let [workspace, dependencies, name, rest @ ..] = path.as_slice() {
                if workspace == "workspace" && dependencies == "dependencies" && name == key {
                    defined = true;
                    if let ([field], Value::Text(package)) = (rest, value) {
                        if field == "package" {
                            return Some(package.clone());
                        }
                    }
                }
            }
        }
        defined.then(|| key.to_owned())
    }

    /// The dependencies, most visible table first (see the module's documentation), each table's
    /// in document order.
    pub(crate) fn dependencies(&self) -> Vec<Dependency> {
        let mut found: Vec<Found<'_>> = Vec::new();
        for (path, value) in &self.keys {
            let Some((rank, table_len)) = dependency_table(path) else {
                continue;
            };
            let (table, rest) = path.split_at(table_len);
            let Some((key, field)) = rest.split_first() else {
                continue;
            };
            let index = match found.iter().position(|d| d.table == table && d.key == key) {
                Some(index) => index,
                None => {
                    found.push(Found {
                        rank,
                        table,
                        key,
                        package: None,
                        workspace: false,
                    });
                    found.len() - 1
                }
            };
            match (field, value) {
                ([field], Value::Text(package)) if field == "package" => found[index].package = Some(package),
                ([field], Value::Bool(true)) if field == "workspace" => found[index].workspace = true,
                _ => {}
            }
        }
        found.sort_by_key(|d| d.rank);
        found
            .into_iter()
            .map(|d| Dependency {
                key: d.key.clone(),
                package: if d.workspace {
                    Package::FromWorkspace
                } else {
                    Package::Named(d.package.unwrap_or(d.key).clone())
                },
            })
            .collect()
    }
}

/// A dependency while its table's keys are read (merged by table and key).
struct Found<'m> {
    /// Its table's preference, 0 first.
    rank: u8,
    table: &'m [String],
    key: &'m String,
    package: Option<&'m String>,
    workspace: bool,
}

/// Whether `path` lies in a dependency table: its rank (0 most visible) and the table path's
/// length.
fn dependency_table(path: &[String]) -> Option<(u8, usize)> {
    let is_dev = |table: &str| table == "dev-dependencies" || table == "dev_dependencies";
    match path {
        [table, ..] if table == "dependencies" => Some((0, 1)),
        [target, _, table, ..] if target == "target" && table == "dependencies" => Some((1, 3)),
        [table, ..] if is_dev(table) => Some((2, 1)),
        [target, _, table, ..] if target == "target" && is_dev(table) => Some((3, 3)),
        _ => None,
    }
}

/// One line for a parse error: the parser's description and the line:column it points at.
fn describe(text: &str, error: &ParseError) -> String {
    let at = error
        .unexpected()
        .or(error.context())
        .map(|span| span.start())
        .unwrap_or(0);
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("invalid TOML at line {line}, column {column}: {}", error.description())
}

/// Turns the parser's events into keys. The parser reported no error, so the events are well
/// formed: a header's keys end with its close event, a key-value's keys with `KeyValSep`.
struct Walker<'i, I> {
    source: Source<'i>,
    events: I,
    keys: Vec<(Vec<String>, Value)>,
    errors: Vec<ParseError>,
}

impl<I: Iterator<Item = Event>> Walker<'_, I> {
    fn document(&mut self) {
        let mut table: Vec<String> = Vec::new();
        // Inside an array of tables (`[[bin]]`): nothing we read lives there.
        let mut in_array_table = false;
        while let Some(event) = self.events.next() {
            match event.kind() {
                EventKind::StdTableOpen => {
                    table = self.dotted_key();
                    in_array_table = false;
                    self.keys.push((table.clone(), Value::Other));
                }
                EventKind::ArrayTableOpen => {
                    self.dotted_key();
                    in_array_table = true;
                }
                EventKind::SimpleKey => {
                    let mut path = table.clone();
                    path.extend(self.dotted_key_from(event));
                    self.value(path, !in_array_table);
                }
                _ => {}
            }
        }
    }

    /// The keys up to the event that ends them (consumed).
    fn dotted_key(&mut self) -> Vec<String> {
        match self.events.next() {
            Some(first) if first.kind() == EventKind::SimpleKey => self.dotted_key_from(first),
            _ => Vec::new(),
        }
    }

    fn dotted_key_from(&mut self, first: Event) -> Vec<String> {
        let mut keys = vec![self.decode_key(first)];
        while let Some(event) = self.events.next() {
            match event.kind() {
                EventKind::SimpleKey => keys.push(self.decode_key(event)),
                EventKind::KeySep => {}
                _ => break,
            }
        }
        keys
    }

    fn decode_key(&mut self, event: Event) -> String {
        let mut key = String::new();
        if let Some(raw) = self.source.get(event) {
            raw.decode_key(&mut key, &mut self.errors);
        }
        key
    }

    /// The value after `path =`, recorded under `path` when `record`.
    fn value(&mut self, path: Vec<String>, record: bool) {
        let Some(event) = self.events.next() else { return };
        let value = match event.kind() {
            EventKind::Scalar => {
                let mut text = String::new();
                match self.source.get(event) {
                    Some(raw) => match raw.decode_scalar(&mut text, &mut self.errors) {
                        ScalarKind::String => Value::Text(text),
                        ScalarKind::Boolean(b) => Value::Bool(b),
                        _ => Value::Other,
                    },
                    None => Value::Other,
                }
            }
            EventKind::InlineTableOpen => {
                if record {
                    self.keys.push((path.clone(), Value::Other));
                }
                while let Some(event) = self.events.next() {
                    match event.kind() {
                        EventKind::SimpleKey => {
                            let mut inner = path.clone();
                            inner.extend(self.dotted_key_from(event));
                            self.value(inner, record);
                        }
                        EventKind::InlineTableClose => break,
                        _ => {}
                    }
                }
                return;
            }
            EventKind::ArrayOpen => {
                let mut depth = 1;
                while depth > 0 {
                    match self.events.next().map(|event| event.kind()) {
                        Some(EventKind::ArrayOpen) => depth += 1,
                        Some(EventKind::ArrayClose) => depth -= 1,
                        Some(_) => {}
                        None => break,
                    }
                }
                Value::Other
            }
            _ => Value::Other,
        };
        if record {
            self.keys.push((path, value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Dependency, Manifest, Package};

    fn deps(text: &str) -> Vec<(String, Package)> {
        Manifest::parse(text)
            .unwrap()
            .dependencies()
            .into_iter()
            .map(|Dependency { key, package }| (key, package))
            .collect()
    }

    fn package(name: &str) -> Package {
        Package::Named(name.to_owned())
    }

    #[test]
    fn every_way_of_writing_a_dependency() {
        let text = r#"
            [package]
            name = "app" # a comment
            [dependencies]
            plain = "1"
            nc = { package = "notify-core", path = "../notify-core", features = ["a", "b"] }
            dotted.package = "dotted-package"
            dotted.version = "1"
            "quoted-key" = { version = "1" }
            'literal' = "1"
            [dependencies.header]
            package = 'header-package'
            features = [{ x = 1 }, [2, [3]]]
            [dependencies.just_a_table]
            features = ["x"]
        "#;
        assert_eq!(
            deps(text),
            [
                ("plain".to_owned(), package("plain")),
                ("nc".to_owned(), package("notify-core")),
                ("dotted".to_owned(), package("dotted-package")),
                ("quoted-key".to_owned(), package("quoted-key")),
                ("literal".to_owned(), package("literal")),
                ("header".to_owned(), package("header-package")),
                ("just_a_table".to_owned(), package("just_a_table")),
            ]
        );
    }

    #[test]
    fn dependencies_come_before_target_and_dev_dependencies() {
        let text = r#"
            [dev-dependencies]
            dev = { package = "notify-core" }
            [target.'cfg(target_os = "linux")'.dev-dependencies]
            target_dev = { package = "notify-core" }
            [target."cfg(unix)".dependencies]
            target = { package = "notify-core" }
            [dependencies]
            normal = { package = "notify-core" }
        "#;
        let keys: Vec<String> = deps(text).into_iter().map(|(key, _)| key).collect();
        assert_eq!(keys, ["normal", "target", "dev", "target_dev"]);
    }

    #[test]
    fn inline_dependency_tables_and_the_old_dev_dependencies_spelling() {
        let text = r#"
            dependencies = { nc = { package = "notify-core" } }
            dev_dependencies = { other = "1" }
            target = { x86_64-pc-windows-gnu = { dependencies = { win = "1" } } }
        "#;
        assert_eq!(
            deps(text),
            [
                ("nc".to_owned(), package("notify-core")),
                ("win".to_owned(), package("win")),
                ("other".to_owned(), package("other")),
            ]
        );
    }

    #[test]
    fn workspace_inheritance_and_the_roots_entries() {
        let member = "[dependencies]\nncw = { workspace = true, features = [\"testing\"] }\nother.workspace = true\n";
        assert_eq!(
            deps(member),
            [
                ("ncw".to_owned(), Package::FromWorkspace),
                ("other".to_owned(), Package::FromWorkspace)
            ]
        );
        let root = Manifest::parse(
            "[workspace]\nmembers = [\"a\"]\n[workspace.dependencies]\nncw = { package = \"notify-core\", path = \"x\" }\nother = \"1\"\n",
        )
        .unwrap();
        assert!(root.is_workspace_root());
        assert_eq!(root.workspace_dependency("ncw").as_deref(), Some("notify-core"));
        assert_eq!(root.workspace_dependency("other").as_deref(), Some("other"));
        assert_eq!(root.workspace_dependency("absent"), None);
        assert!(!Manifest::parse(member).unwrap().is_workspace_root());
    }

    #[test]
    fn package_fields_and_arrays_of_tables_are_not_dependencies() {
        let text = r#"
            [package]
            name = "notify-core"
            workspace = "../.."
            [[bin]]
            name = "x"
            dependencies = { not_one = "1" }
            [build-dependencies]
            build = "1"
        "#;
        let manifest = Manifest::parse(text).unwrap();
        assert_eq!(manifest.package_name(), Some("notify-core"));
        assert_eq!(manifest.workspace_path(), Some("../.."));
        assert!(manifest.dependencies().is_empty());
    }

    #[test]
    fn escapes_in_keys_and_strings_are_decoded() {
        let text = "[dependencies]\n\"n\\u0063\" = { package = \"notify\\u002dcore\" }\n";
        assert_eq!(deps(text), [("nc".to_owned(), package("notify-core"))]);
    }

    #[test]
    fn invalid_toml_is_one_line_with_its_position() {
        let error = Manifest::parse("[package]\nname = \"x\"\n[dependencies\nx = 1\n").unwrap_err();
        assert!(error.starts_with("invalid TOML at line 3, column "), "{error}");
        assert!(!error.contains('\n'), "{error}");
        let deep = format!("x = {}{}", "[".repeat(1000), "]".repeat(1000));
        assert!(Manifest::parse(&deep).unwrap_err().starts_with("invalid TOML"));
    }
}
