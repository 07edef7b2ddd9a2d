//! The host's memory, read from `/proc/meminfo`, and the daemon's own resident size.

use std::path::Path;

/// `MemAvailable` of a `/proc/meminfo`-format file, bytes; `None` when it cannot be read.
pub fn mem_available(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    parse_mem_available(&text)
}

/// `MemTotal` of a `/proc/meminfo`-format file, bytes; `None` when it cannot be read.
pub fn mem_total(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    parse_meminfo(&text, "MemTotal:")
}

/// `MemAvailable` of `/proc/meminfo` text, bytes.
pub fn parse_mem_available(text: &str) -> Option<u64> {
    parse_meminfo(text, "MemAvailable:")
}

/// The field `key` (with its colon) of `/proc/meminfo` text, bytes.
fn parse_meminfo(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let mut it = line.split_whitespace().skip(1);
    let n: u64 = it.next()?.parse().ok()?;
    match it.next() {
        Some("kB") | None => n.checked_mul(1024),
        Some(_) => None,
    }
}

/// The daemon's resident set size, bytes (`VmRSS` of `/proc/self/status`).
pub fn own_rss() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok()?.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:    2048 kB\n";
        assert_eq!(parse_mem_available(text), Some(2048 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
        assert_eq!(parse_mem_available("MemAvailable: lots kB\n"), None);
        assert!(mem_available(Path::new("/proc/meminfo")).is_some_and(|b| b > 0));
        assert!(own_rss().is_some_and(|b| b > 0));
    }
}
