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

/// Checks `prefix` as the literal start of every exported subject: one or more dot-separated
/// tokens, none empty, none holding whitespace or a wildcard (`*`, `>`). The error names the
/// prefix and the bad token.
pub(crate) fn check_prefix(prefix: &str) -> Result<(), String> {
    check_tokens(prefix, false).map_err(|why| format!("prefix {prefix:?}: {why}"))
}

/// Checks a subscription subject (NATS wildcards allowed): dot-separated tokens, none empty, none
/// holding whitespace; `*` only as a whole token, `>` only as the whole last token. The error
/// names the subject and the bad token.
pub(crate) fn check_filter(subject: &str) -> Result<(), String> {
    check_tokens(subject, true).map_err(|why| format!("subject {subject:?}: {why}"))
}

/// Checks a queue group name: not empty, no whitespace (NATS protocol framing).
pub(crate) fn check_queue_group(group: &str) -> Result<(), String> {
    if group.is_empty() || group.contains(char::is_whitespace) {
        return Err(format!("queue group {group:?}: must be non-empty, without whitespace"));
    }
    Ok(())
}

fn check_tokens(subject: &str, wildcards: bool) -> Result<(), String> {
    let count = subject.split('.').count();
    for (i, token) in subject.split('.').enumerate() {
        if token.is_empty() {
            return Err(format!("empty token (token {} of {count})", i + 1));
        }
        if token.contains(char::is_whitespace) {
            return Err(format!("token {token:?} contains whitespace"));
        }
        if token.contains(['*', '>']) {
            if !wildcards {
                return Err(format!("token {token:?} holds a wildcard (`*`, `>`), not allowed here"));
            }
            match token {
                "*" => {}
                ">" if i + 1 == count => {}
                ">" => return Err("token \">\" is allowed only as the last token".to_owned()),
                _ => return Err(format!("token {token:?}: `*` and `>` must be whole tokens")),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_literal_nonempty_tokens_without_whitespace() {
        assert_eq!(check_prefix("notify"), Ok(()));
        assert_eq!(check_prefix("shop.eu-1"), Ok(()));
        assert_eq!(
            check_prefix("bad prefix"),
            Err(r#"prefix "bad prefix": token "bad prefix" contains whitespace"#.to_owned())
        );
        assert_eq!(
            check_prefix(""),
            Err(r#"prefix "": empty token (token 1 of 1)"#.to_owned())
        );
        assert_eq!(
            check_prefix("a..b"),
            Err(r#"prefix "a..b": empty token (token 2 of 3)"#.to_owned())
        );
        assert_eq!(
            check_prefix("shop."),
            Err(r#"prefix "shop.": empty token (token 2 of 2)"#.to_owned())
        );
        assert_eq!(
            check_prefix("shop.*"),
            Err(r#"prefix "shop.*": token "*" holds a wildcard (`*`, `>`), not allowed here"#.to_owned())
        );
        assert_eq!(
            check_prefix("a\tb"),
            Err("prefix \"a\\tb\": token \"a\\tb\" contains whitespace".to_owned())
        );
    }

    #[test]
    fn filters_take_whole_token_wildcards_and_a_final_greater_than() {
        for ok in ["notify.>", "notify.*.sql", "notify.query.sql", "*.*", ">"] {
            assert_eq!(check_filter(ok), Ok(()), "{ok}");
        }
        assert_eq!(
            check_filter("notify.a.>.b"),
            Err(r#"subject "notify.a.>.b": token ">" is allowed only as the last token"#.to_owned())
        );
        assert_eq!(
            check_filter("notify.a b"),
            Err(r#"subject "notify.a b": token "a b" contains whitespace"#.to_owned())
        );
        assert_eq!(
            check_filter("notify.sq*"),
            Err(r#"subject "notify.sq*": token "sq*": `*` and `>` must be whole tokens"#.to_owned())
        );
        assert_eq!(
            check_filter("notify..sql"),
            Err(r#"subject "notify..sql": empty token (token 2 of 3)"#.to_owned())
        );
    }

    #[test]
    fn queue_groups_are_nonempty_without_whitespace() {
        assert_eq!(check_queue_group("dashboards"), Ok(()));
        assert!(check_queue_group("").is_err());
        assert_eq!(
            check_queue_group("a b"),
            Err(r#"queue group "a b": must be non-empty, without whitespace"#.to_owned())
        );
    }
}
