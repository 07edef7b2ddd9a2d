//! What one API message may carry and what it costs in flight: the limits the server's codec
//! and request budget enforce, and that the configuration is checked against.

/// Most fields one message may carry, those of its nested messages included. Each
/// field may become an allocation of its own (an empty `bytes` entry is 2 bytes on the wire
/// and 24 decoded); the most a client sends is a WindowPoSt partition's 2,349 sector proofs.
pub const MAX_ENTRIES: usize = 65_536;

/// What a message of `len` bytes costs while it is in flight, bytes: three copies (its buffer
/// and then its decoded form, the journal's copy, the form its vanilla proofs are checked in)
/// and the bookkeeping of its fields (at most [`MAX_ENTRIES`], 32 bytes each).
pub fn charge(len: usize) -> u64 {
    3 * len as u64 + 32 * MAX_ENTRIES as u64
}
