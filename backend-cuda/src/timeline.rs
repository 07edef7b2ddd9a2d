//! The device timeline (`CUZK_GPU_TIMELINE=<file>`): each backend operation is bracketed by
//! timed events on its stream, and once both have completed one line is appended to the file:
//!
//! ```text
//! device,stream,operation,start_ms,end_ms
//! ```
//!
//! in milliseconds since the Unix epoch: the wall clock when the backend opened plus the device
//! time since. On the compute stream an operation's
//! start event completes when the stream reaches it (the earlier work done, this operation
//! queued), so the time from one operation's end to the next one's start is time the stream had
//! nothing to run: host work, locks, waits for uploads. `scripts/h200/gpu-timeline.awk` sums
//! both. Off unless the variable is set; the events cost a few microseconds an operation.
//! The device measures from its origin in `f32` milliseconds: a resolution of about 0.06 ms after
//! ten minutes.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Mutex;

use crate::device::{Event, Stream};
use crate::error::CudaError;

/// Completed-or-pending operations of one backend, and where their lines go.
pub(crate) struct Timeline {
    device: usize,
    origin: Event,
    /// The wall clock when `origin` completed, milliseconds since the Unix epoch.
    origin_unix_ms: f64,
    pending: Mutex<VecDeque<(Span, Event)>>,
    out: Mutex<std::fs::File>,
}

/// An operation begun on a stream: its label and start event.
pub(crate) struct Span {
    stream: &'static str,
    label: String,
    start: Event,
}

impl Timeline {
    /// The timeline named by `CUZK_GPU_TIMELINE`, if set; a file that cannot be opened is
    /// reported and leaves the timeline off.
    pub(crate) fn from_env(device: usize, stream: &Stream) -> Option<Timeline> {
        let path = std::env::var_os("CUZK_GPU_TIMELINE")?;
        let open = || -> Result<Timeline, String> {
            let out = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(|e| e.to_string())?;
            let origin = Event::record_timed(stream).map_err(|e| e.to_string())?;
            origin.synchronize().map_err(|e| e.to_string())?;
            let origin_unix_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1e3);
            Ok(Timeline { device, origin, origin_unix_ms, pending: Mutex::new(VecDeque::new()), out: Mutex::new(out) })
        };
        match open() {
            Ok(t) => {
                tracing::info!(path = %path.to_string_lossy(), device, "device timeline on");
                Some(t)
            }
            Err(e) => {
                tracing::warn!(path = %path.to_string_lossy(), error = %e, "device timeline off: cannot open its file");
                None
            }
        }
    }

    /// Starts `label` on `stream` (named `stream_name` in the lines).
    pub(crate) fn begin(&self, stream: &Stream, stream_name: &'static str, label: String) -> Option<Span> {
        Event::record_timed(stream).ok().map(|start| Span { stream: stream_name, label, start })
    }

    /// Ends `span` on `stream`, then writes the lines of every operation completed so far. With
    /// `wait` (an operation that synchronized its stream before returning, so its end event
    /// completes at once) it waits for that event: the line of the last operation of a run is
    /// then written too.
    pub(crate) fn end(&self, span: Span, stream: &Stream, wait: bool) {
        let Ok(end) = Event::record_timed(stream) else { return };
        if wait {
            let _ = end.synchronize();
        }
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.push_back((span, end));
        let mut lines = String::new();
        while let Some((span, end)) = pending.front() {
            match end.is_complete() {
                Ok(false) => break,
                Ok(true) => {}
                Err(_) => {
                    // A failed stream never completes its events: drop the line, not the queue.
                    pending.pop_front();
                    continue;
                }
            }
            if let (Ok(a), Ok(b)) = (span.start.ms_since(&self.origin), end.ms_since(&self.origin)) {
                let (a, b) = (self.origin_unix_ms + f64::from(a), self.origin_unix_ms + f64::from(b));
                lines.push_str(&format!("{},{},{},{a:.3},{b:.3}\n", self.device, span.stream, span.label));
            }
            pending.pop_front();
        }
        drop(pending);
        if !lines.is_empty() {
            let _ = self.out.lock().unwrap_or_else(|e| e.into_inner()).write_all(lines.as_bytes());
        }
    }
}

/// Records `label` on the compute or copy stream around `f` when the timeline is on; `wait`
/// as in [`Timeline::end`].
pub(crate) fn around<T>(
    timeline: Option<&Timeline>,
    stream: &Stream,
    stream_name: &'static str,
    wait: bool,
    label: impl FnOnce() -> String,
    f: impl FnOnce() -> Result<T, CudaError>,
) -> Result<T, CudaError> {
    let Some(t) = timeline else { return f() };
    let span = t.begin(stream, stream_name, label());
    let out = f();
    if let Some(span) = span {
        t.end(span, stream, wait);
    }
    out
}
