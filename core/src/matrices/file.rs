//! The on-disk form of [`ConstraintMatrices`], so a restart or a second process does not record
//! a circuit again.
//!
//! Little-endian throughout: the magic `CUZKMTX1`, the length and bytes of a caller's key (the
//! circuit's shape and whatever versions its structure depends on: a file under another key is
//! stale), the sizes, then `A, B, C` (row offsets as u64, columns and coefficient indices as
//! u32), the coefficient table (canonical scalars), the three density bitmaps' words, and last
//! an XXH3-64 checksum of everything before it. [`ConstraintMatrices::from_file_bytes`] checks
//! the checksum, the sizes against the length and every offset, column and coefficient index
//! against the sizes, so a file that passes cannot make an evaluation read out of bounds.

use std::io::Write;

use blstrs::Scalar;
use ff::PrimeField;

use super::{check_csr, ConstraintMatrices, Csr};
use crate::alloc::{heap, AllocError};
use crate::density::DensityBitmap;

const MAGIC: &[u8; 8] = b"CUZKMTX1";

/// Why a matrices file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MatricesFileError {
    /// Not a matrices file, or one of another format version.
    #[error("not a cuzk matrices file (bad magic)")]
    Magic,
    /// Written under another key: another circuit, or the same one at another version.
    #[error("stale: written for {found:?}, wanted {want:?}")]
    Stale {
        /// The key in the file.
        found: String,
        /// The key asked for.
        want: String,
    },
    /// Shorter than its sizes say.
    #[error("truncated: {0}")]
    Truncated(&'static str),
    /// The checksum does not match the contents.
    #[error("checksum mismatch: the file is corrupt")]
    Checksum,
    /// The contents are inconsistent (an offset, column or coefficient out of range).
    #[error("inconsistent contents: {0}")]
    Invalid(String),
    /// Memory for the matrices could not be obtained.
    #[error(transparent)]
    Alloc(#[from] AllocError),
}

/// A writer that hashes what passes through it.
struct Hashing<'a, W: Write> {
    inner: &'a mut W,
    hasher: xxhash_rust::xxh3::Xxh3,
}

impl<W: Write> Write for Hashing<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A cursor over the file's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], MatricesFileError> {
        if self.bytes.len() < n {
            return Err(MatricesFileError::Truncated(what));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, MatricesFileError> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().expect("8 bytes")))
    }

    fn size(&mut self, what: &'static str) -> Result<usize, MatricesFileError> {
        usize::try_from(self.u64(what)?).map_err(|_| MatricesFileError::Invalid(format!("{what} does not fit this machine")))
    }

    /// `n` little-endian values of `W` bytes each.
    fn values<const W: usize, T>(&mut self, n: usize, what: &'static str, f: fn([u8; W]) -> T) -> Result<Vec<T>, MatricesFileError> {
        let bytes = self.take(n.checked_mul(W).ok_or(MatricesFileError::Truncated(what))?, what)?;
        Ok(bytes.chunks_exact(W).map(|c| f(c.try_into().expect("W bytes"))).collect())
    }
}

impl ConstraintMatrices {
    /// The file form under `key`.
    pub fn to_file_bytes(&self, key: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.heap_bytes() + 256);
        self.write_file(key, &mut out).expect("writing to memory cannot fail");
        out
    }

    /// Writes the file form under `key` to `w`, streaming (the checksum is computed on the way).
    pub fn write_file(&self, key: &str, w: &mut impl Write) -> std::io::Result<()> {
        let mut h = Hashing { inner: w, hasher: xxhash_rust::xxh3::Xxh3::new() };
        h.write_all(MAGIC)?;
        let put = |h: &mut Hashing<'_, _>, v: u64| h.write_all(&v.to_le_bytes());
        put(&mut h, key.len() as u64)?;
        h.write_all(key.as_bytes())?;
        for v in [self.num_inputs, self.num_aux, self.num_constraints(), self.coeffs.len()] {
            put(&mut h, v as u64)?;
        }
        for m in [&self.a, &self.b, &self.c] {
            put(&mut h, m.row_start.len() as u64)?;
            put(&mut h, m.cols.len() as u64)?;
        }
        for d in [&self.a_aux_density, &self.b_input_density, &self.b_aux_density] {
            put(&mut h, d.len() as u64)?;
        }
        let mut buf = Vec::with_capacity(1 << 16);
        let mut chunked = |h: &mut Hashing<'_, _>, n: usize, item: &dyn Fn(usize, &mut Vec<u8>)| -> std::io::Result<()> {
            for i in 0..n {
                item(i, &mut buf);
                if buf.len() >= 1 << 16 {
                    h.write_all(&buf)?;
                    buf.clear();
                }
            }
            h.write_all(&buf)?;
            buf.clear();
            Ok(())
        };
        for m in [&self.a, &self.b, &self.c] {
            chunked(&mut h, m.row_start.len(), &|i, b| b.extend_from_slice(&m.row_start[i].to_le_bytes()))?;
            chunked(&mut h, m.cols.len(), &|i, b| b.extend_from_slice(&m.cols[i].to_le_bytes()))?;
            chunked(&mut h, m.coeffs.len(), &|i, b| b.extend_from_slice(&m.coeffs[i].to_le_bytes()))?;
        }
        chunked(&mut h, self.coeffs.len(), &|i, b| b.extend_from_slice(&self.coeffs[i].to_repr()))?;
        for d in [&self.a_aux_density, &self.b_input_density, &self.b_aux_density] {
            let words = d.words();
            chunked(&mut h, words.len(), &|i, b| b.extend_from_slice(&words[i].to_le_bytes()))?;
        }
        let sum = h.hasher.digest();
        h.inner.write_all(&sum.to_le_bytes())
    }

    /// Reads the file form written under `key`, checking everything (see the module docs).
    pub fn from_file_bytes(bytes: &[u8], key: &str) -> Result<Self, MatricesFileError> {
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(MatricesFileError::Magic);
        }
        let body = bytes.len().checked_sub(8).filter(|&b| b >= MAGIC.len()).ok_or(MatricesFileError::Truncated("checksum"))?;
        let mut r = Reader { bytes: &bytes[MAGIC.len()..body] };
        let key_len = r.size("key")?;
        let found = String::from_utf8_lossy(r.take(key_len, "key")?).into_owned();
        if found != key {
            return Err(MatricesFileError::Stale { found, want: key.to_string() });
        }
        let sum = u64::from_le_bytes(bytes[body..].try_into().expect("8 bytes"));
        if xxhash_rust::xxh3::xxh3_64(&bytes[..body]) != sum {
            return Err(MatricesFileError::Checksum);
        }
        let (num_inputs, num_aux, rows, table_len) = (r.size("sizes")?, r.size("sizes")?, r.size("sizes")?, r.size("sizes")?);
        let mut shapes = [(0usize, 0usize); 3];
        for s in &mut shapes {
            *s = (r.size("matrix sizes")?, r.size("matrix sizes")?);
        }
        let density_lens = [r.size("density sizes")?, r.size("density sizes")?, r.size("density sizes")?];
        let mut csr = Vec::with_capacity(3);
        for &(offsets, entries) in &shapes {
            let row_start = r.values::<8, u64>(offsets, "row offsets", u64::from_le_bytes)?;
            let cols = r.values::<4, u32>(entries, "columns", u32::from_le_bytes)?;
            let coeffs = r.values::<4, u32>(entries, "coefficient indices", u32::from_le_bytes)?;
            csr.push(Csr { row_start, cols, coeffs });
        }
        let mut coeff_table = Vec::with_capacity(table_len);
        for _ in 0..table_len {
            let repr: [u8; 32] = r.take(32, "coefficients")?.try_into().expect("32 bytes");
            let c =
                Option::<Scalar>::from(Scalar::from_repr(repr)).ok_or_else(|| MatricesFileError::Invalid("a coefficient is not a canonical scalar".into()))?;
            coeff_table.push(c);
        }
        let mut densities = Vec::with_capacity(3);
        for len in density_lens {
            let words = r.values::<8, u64>(len.div_ceil(64), "densities", u64::from_le_bytes)?;
            densities.push(
                DensityBitmap::from_words(&words, len, heap())?
                    .ok_or_else(|| MatricesFileError::Invalid("a density bitmap has bits past its length".into()))?,
            );
        }
        if !r.bytes.is_empty() {
            return Err(MatricesFileError::Invalid(format!("{} bytes after the densities", r.bytes.len())));
        }
        if density_lens != [num_aux, num_inputs, num_aux] {
            return Err(MatricesFileError::Invalid(format!("densities of {density_lens:?} bits for {num_inputs} inputs and {num_aux} aux")));
        }
        if table_len < 2 || coeff_table[0] != Scalar::from(1u64) || coeff_table[1] != -Scalar::from(1u64) {
            return Err(MatricesFileError::Invalid("the coefficient table does not start with 1, -1".into()));
        }
        for (name, m) in ["A", "B", "C"].iter().zip(&csr) {
            check_csr(&m.view(), rows, num_inputs, num_aux, table_len).map_err(|e| MatricesFileError::Invalid(format!("matrix {name}: {e}")))?;
        }
        let [a, b, c]: [Csr; 3] = csr.try_into().expect("three matrices");
        let [a_aux_density, b_input_density, b_aux_density]: [DensityBitmap; 3] = densities.try_into().expect("three densities");
        Ok(ConstraintMatrices { a, b, c, coeffs: coeff_table, num_inputs, num_aux, a_aux_density, b_input_density, b_aux_density })
    }
}

#[cfg(test)]
mod tests {
    use super::super::Column;
    use super::*;
    use ff::Field;

    fn sample() -> ConstraintMatrices {
        let k = Scalar::from(7u64);
        let a = vec![vec![(Column::Input(0), Scalar::ONE), (Column::Aux(1), k)], vec![]];
        let b = vec![vec![(Column::Aux(0), -Scalar::ONE)], vec![(Column::Input(1), k.square())]];
        let c = vec![vec![], vec![(Column::Aux(2), Scalar::ONE), (Column::Aux(2), k)]];
        ConstraintMatrices::from_rows(2, 3, &a, &b, &c).unwrap()
    }

    fn same(x: &ConstraintMatrices, y: &ConstraintMatrices) -> bool {
        x.views().iter().zip(y.views()).all(|(p, q)| p.row_start == q.row_start && p.cols == q.cols && p.coeffs == q.coeffs)
            && x.coefficients() == y.coefficients()
            && (x.num_inputs, x.num_aux) == (y.num_inputs, y.num_aux)
            && x.densities().iter().zip(y.densities()).all(|(p, q)| p.words() == q.words() && p.len() == q.len() && p.count() == q.count())
    }

    #[test]
    fn round_trip_and_every_damage_is_refused() {
        let m = sample();
        let bytes = m.to_file_bytes("sample v1");
        assert!(same(&ConstraintMatrices::from_file_bytes(&bytes, "sample v1").unwrap(), &m));
        assert!(matches!(ConstraintMatrices::from_file_bytes(&bytes, "sample v2"), Err(MatricesFileError::Stale { .. })));
        assert!(matches!(ConstraintMatrices::from_file_bytes(b"CUZKMTX0rest", "sample v1"), Err(MatricesFileError::Magic)));
        // Every truncation and every flipped byte is refused, never accepted or panicking.
        for n in 0..bytes.len() {
            assert!(ConstraintMatrices::from_file_bytes(&bytes[..n], "sample v1").is_err(), "truncated to {n} bytes");
            let mut bad = bytes.clone();
            bad[n] ^= 0x10;
            assert!(ConstraintMatrices::from_file_bytes(&bad, "sample v1").is_err(), "byte {n} flipped");
        }
    }

    #[test]
    fn a_consistent_checksum_does_not_excuse_bad_contents() {
        // A column out of range, with the checksum recomputed: refused by the structural check.
        let mut m = sample();
        m.a.cols[1] = 9 | super::super::AUX;
        let mut bytes = m.to_file_bytes("k");
        let body = bytes.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..body]);
        bytes[body..].copy_from_slice(&sum.to_le_bytes());
        assert!(matches!(ConstraintMatrices::from_file_bytes(&bytes, "k"), Err(MatricesFileError::Invalid(e)) if e.contains("matrix A")));
    }
}
