//! The repository describes the project as it is, not how it was built: no tracked text file
//! may cite numbered work sessions or numbered runs ("call" and a number), speak of a session as
//! a period of work ("this", "last", "previous" ... before the word, or "of", "in", "before",
//! "after", "since" right after it), or of machines on loan.
//!
//! The word "session" in its other senses (a TLS, gRPC or HTTP session, a process session as
//! in `setsid`) is fine: the patterns below only match it next to a number or in those
//! history phrases. The files come from `git ls-files` at the workspace root; without git, the
//! tree is walked, skipping `target/`, `.git/` and `gpu-bin/`.
//!
//! And `docs/architecture.md` stays a map: at most 250 lines, none of its prose lines over 100
//! characters (decisions and figures belong in `docs/perf.md`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Offsets at which `word` starts in `s` with no word character just before it.
fn word_starts<'a>(s: &'a [u8], word: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    (0..s.len().saturating_sub(word.len() - 1)).filter(move |&i| s[i..].starts_with(word) && (i == 0 || !is_word(s[i - 1])))
}

/// From `i`: an optional plural `s`, then blanks, `-` or `_`, then a digit? Returns the offset
/// after the digits.
fn number_after(s: &[u8], mut i: usize) -> Option<usize> {
    if s.get(i) == Some(&b's') {
        i += 1;
    }
    while matches!(s.get(i), Some(b' ' | b'\t' | b'-' | b'_')) {
        i += 1;
    }
    let start = i;
    while s.get(i).is_some_and(|c| c.is_ascii_digit()) {
        i += 1;
    }
    (i > start).then_some(i)
}

/// The word after offset `i` (blanks skipped), lowercase ASCII.
fn next_word(s: &[u8], mut i: usize) -> &[u8] {
    while matches!(s.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    let start = i;
    while s.get(i).is_some_and(|&c| is_word(c)) {
        i += 1;
    }
    &s[start..i]
}

/// The word that ends just before offset `i` (blanks skipped).
fn prev_word(s: &[u8], i: usize) -> &[u8] {
    let mut end = i;
    while end > 0 && matches!(s[end - 1], b' ' | b'\t') {
        end -= 1;
    }
    let mut start = end;
    while start > 0 && is_word(s[start - 1]) {
        start -= 1;
    }
    &s[start..end]
}

const HISTORY_BEFORE: &[&[u8]] = &[b"this", b"last", b"previous", b"earlier", b"later", b"next", b"that", b"same"];
const HISTORY_AFTER: &[&[u8]] = &[b"of", b"in", b"before", b"after", b"since"];
/// Endings after "len" that the scan rejects: the forms of the verb (past, base, third person, -ing).
const LOAN_SUFFIXES: &[&[u8]] = &[b"t", b"d", b"ds", b"ding"];

/// Why `line` cites the project's history, if it does.
fn offence(line: &str) -> Option<&'static str> {
    let lower = line.to_ascii_lowercase();
    let s = lower.as_bytes();
    for i in word_starts(s, b"session") {
        let end = i + b"session".len();
        if number_after(s, end).is_some() {
            return Some("a numbered work session");
        }
        let plural = usize::from(s.get(end) == Some(&b's'));
        if s.get(end + plural).is_some_and(|&c| is_word(c)) {
            continue; // "sessionid", "sessions_total" and the like
        }
        if HISTORY_BEFORE.contains(&prev_word(s, i)) || HISTORY_AFTER.contains(&next_word(s, end + plural)) {
            return Some("a work session");
        }
    }
    for i in word_starts(s, b"call") {
        if let Some(end) = number_after(s, i + b"call".len()) {
            if !s.get(end).is_some_and(|&c| is_word(c)) {
                return Some("a numbered run (call and a number)");
            }
        }
    }
    for i in word_starts(s, b"len") {
        let rest = &s[i + 3..];
        let word = &rest[..rest.iter().position(|&c| !is_word(c)).unwrap_or(rest.len())];
        if LOAN_SUFFIXES.contains(&word) {
            return Some("machines on loan");
        }
    }
    None
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Tracked files (relative to the root), or every file under it when git is not there.
fn files(root: &Path) -> Vec<PathBuf> {
    let out = Command::new("git").arg("-C").arg(root).args(["ls-files", "-z"]).output();
    if let Ok(out) = out {
        if out.status.success() && !out.stdout.is_empty() {
            return out.stdout.split(|&b| b == 0).filter(|p| !p.is_empty()).map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned())).collect();
        }
    }
    let mut found = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&dir)) else { continue };
        for e in entries.flatten() {
            let rel = dir.join(e.file_name());
            let Ok(ty) = e.file_type() else { continue };
            if ty.is_dir() {
                if !matches!(e.file_name().to_str(), Some("target" | ".git" | "gpu-bin")) {
                    stack.push(rel);
                }
            } else if ty.is_file() {
                found.push(rel);
            }
        }
    }
    found
}

#[test]
fn no_history_in_tracked_text() {
    let root = root();
    let files = files(&root);
    assert!(!files.is_empty(), "no files found under {}", root.display());
    let mut hits = Vec::new();
    for rel in &files {
        let Ok(bytes) = std::fs::read(root.join(rel)) else { continue }; // deleted in the work tree
        if bytes.contains(&0) {
            continue; // binary
        }
        let Ok(text) = std::str::from_utf8(&bytes) else { continue };
        for (n, line) in text.lines().enumerate() {
            if let Some(why) = offence(line) {
                hits.push(format!("{}:{}: {why}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(hits.is_empty(), "{} line(s) describe how the project was built rather than what it is:\n{}", hits.len(), hits.join("\n"));
}

/// Joins the parts, so that the examples below do not trip the scan of this very file.
fn j(parts: &[&str]) -> String {
    parts.concat()
}

#[test]
fn matcher_flags_history() {
    for line in [
        j(&["see sess", "ion 9"]),
        j(&["scripts/h200/sess", "ion8-cal", "l3.sh"]),
        j(&["Sess", "ion-5 figures"]),
        j(&["sess", "ions 5 to 9"]),
        j(&["cal", "l 7's run"]),
        j(&["(cal", "l 4)"]),
        j(&["cal", "l7"]),
        j(&["cal", "ls 1–7"]),
        j(&["x-cal", "l10.sh"]),
        j(&["this ses", "sion's kernels"]),
        j(&["the previous ses", "sion"]),
        j(&["ses", "sions before this one"]),
        j(&["an H200 le", "nt by the tool"]),
        j(&["le", "nding machines"]),
    ] {
        assert!(offence(&line).is_some(), "not flagged: {line:?}");
    }
}

#[test]
fn matcher_leaves_other_senses() {
    for line in [
        "a TLS session",
        "the gRPC session is closed",
        "HTTP session cookies",
        "setsid puts the daemon in a new session",
        "session leader",
        "sessionid = 4",
        "sessions_total 3",
        "possession 5",
        "fn call(x: u32)",
        "recall 3 items",
        "call 0x10",
        "a kernel call per window",
        "equivalent",
        "the blend 2 mode",
        "len(t)",
        "Calling 3 times",
    ] {
        assert_eq!(offence(line), None, "flagged: {line:?}");
    }
}

#[test]
fn architecture_doc_stays_a_map() {
    let path = root().join("docs/architecture.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() <= 250, "docs/architecture.md has {} lines, at most 250: move decisions and figures to docs/perf.md", lines.len());
    let long: Vec<String> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('|') && l.chars().count() > 100)
        .map(|(i, l)| format!("line {}: {} characters", i + 1, l.chars().count()))
        .collect();
    assert!(long.is_empty(), "docs/architecture.md prose over 100 characters a line: {long:?}");
}
