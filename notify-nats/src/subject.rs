//! Subjects: `<prefix>.<event name>`, so NATS wildcards select events as notify's globs do
//! (`notify.*.sql` is every event of the `sql` namespace).

/// The subject of event `name` under `prefix`: each dot-separated token of the name is kept, except
/// that characters NATS gives a meaning to in subjects (space, tab, CR, LF, `*`, `>`) become `_` and
/// an empty token becomes `_`. The event's exact name travels in the message either way.
///
/// ```
/// assert_eq!(notify_nats::subject_for("notify", "query.sql"), "notify.query.sql");
/// assert_eq!(notify_nats::subject_for("notify", "odd name..*"), "notify.odd_name._._");
/// ```
pub fn subject_for(prefix: &str, name: &str) -> String {
    let mut subject = String::with_capacity(prefix.len() + 1 + name.len());
    subject.push_str(prefix);
    for token in name.split('.') {
        subject.push('.');
        if token.is_empty() {
            subject.push('_');
            continue;
        }
        subject.extend(token.chars().map(|c| match c {
            ' ' | '\t' | '\r' | '\n' | '*' | '>' => '_',
            c => c,
        }));
    }
    subject
}
