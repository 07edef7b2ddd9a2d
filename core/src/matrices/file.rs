//! The on-disk form of [`ConstraintMatrices`], so a restart or a second process does not record
//! a circuit again.
//!
//! Little-endian throughout: the magic `CUZKMTX2`, the length and bytes of a caller's key (the
//! circuit's shape and whatever versions its structure depends on: a file under another key is
//! stale), the sizes, then `A, B, C` (row offsets as u64, columns and coefficient indices as
//! u32), the coefficient table (canonical scalars), the three density bitmaps' words, and last
//! an XXH3-64 checksum of everything before it. The key and every array are followed by zero
//! bytes up to a multiple of 8, so each array starts 8-byte aligned and a mapped file can be
//! read in place ([`ConstraintMatrices::from_file_image`]). Reading checks the checksum, the
//! sizes against the length and every offset, column and coefficient index against the sizes,
//! so a file that passes cannot make an evaluation read out of bounds.

use std::io::Write;
use std::ops::Range;

use blstrs::Scalar;
use ff::PrimeField;

use super::{check_csr, ConstraintMatrices, Csr, FileImage, Matrix};
use crate::alloc::{heap, AllocError};
use crate::density::DensityBitmap;

const MAGIC: &[u8; 8] = b"CUZKMTX2";

/// Why a matrices file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MatricesFileError {
    /// Not a matrices file, or one of another format version.
    #[error("not a cuzk matrices file of format 2 (bad magic)")]
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

/// A writer that hashes and counts what passes through it.
struct Hashing<'a, W: Write> {
    inner: &'a mut W,
    hasher: xxhash_rust::xxh3::Xxh3,
    written: usize,
}

impl<W: Write> Write for Hashing<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Hashing<'_, W> {
    /// Zero bytes up to the next multiple of 8.
    fn pad(&mut self) -> std::io::Result<()> {
        let n = self.written.next_multiple_of(8) - self.written;
        self.write_all(&[0; 8][..n])
    }
}

/// A cursor over the file's bytes, which knows its position in the file.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], MatricesFileError> {
        if self.bytes.len() < n {
            return Err(MatricesFileError::Truncated(what));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        self.at += n;
        Ok(head)
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, MatricesFileError> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().expect("8 bytes")))
    }

    fn size(&mut self, what: &'static str) -> Result<usize, MatricesFileError> {
        usize::try_from(self.u64(what)?).map_err(|_| MatricesFileError::Invalid(format!("{what} does not fit this machine")))
    }

    /// Skips the zero bytes up to the next multiple of 8 in the file.
    fn pad(&mut self, what: &'static str) -> Result<(), MatricesFileError> {
        let n = self.at.next_multiple_of(8) - self.at;
        if self.take(n, what)?.iter().any(|&b| b != 0) {
            return Err(MatricesFileError::Invalid(format!("non-zero padding after the {what}")));
        }
        Ok(())
    }

    /// The file range of `n` values of `W` bytes each, and the padding after them.
    fn array<const W: usize>(&mut self, n: usize, what: &'static str) -> Result<Range<usize>, MatricesFileError> {
        let start = self.at;
        self.take(n.checked_mul(W).ok_or(MatricesFileError::Truncated(what))?, what)?;
        let end = self.at;
        self.pad(what)?;
        Ok(start..end)
    }
}

/// `A`, `B` or `C` in a file: the file ranges of its row offsets, columns and coefficient
/// indices.
type Arrays = [Range<usize>; 3];

/// A checked file's sizes, array ranges, and the small parts already decoded.
struct Parsed {
    num_inputs: usize,
    num_aux: usize,
    rows: usize,
    matrices: [Arrays; 3],
    coeffs: Vec<Scalar>,
    densities: [DensityBitmap; 3],
}

fn decode<const W: usize, T>(bytes: &[u8], f: fn([u8; W]) -> T) -> Vec<T> {
    bytes.chunks_exact(W).map(|c| f(c.try_into().expect("W bytes"))).collect()
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
        let mut h = Hashing { inner: w, hasher: xxhash_rust::xxh3::Xxh3::new(), written: 0 };
        h.write_all(MAGIC)?;
        let put = |h: &mut Hashing<'_, _>, v: u64| h.write_all(&v.to_le_bytes());
        put(&mut h, key.len() as u64)?;
        h.write_all(key.as_bytes())?;
        h.pad()?;
        for v in [self.num_inputs, self.num_aux, self.num_constraints(), self.coeffs.len()] {
            put(&mut h, v as u64)?;
        }
        let views = self.views();
        for m in &views {
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
            h.pad()
        };
        for m in &views {
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

    /// Reads the file form written under `key` into memory of its own, checking everything
    /// (see the module docs).
    pub fn from_file_bytes(bytes: &[u8], key: &str) -> Result<Self, MatricesFileError> {
        let p = parse(bytes, key)?;
        let matrices = p.matrices.clone().map(|[rs, cols, ks]| {
            Matrix::Owned(Csr {
                row_start: decode::<8, u64>(&bytes[rs], u64::from_le_bytes),
                cols: decode::<4, u32>(&bytes[cols], u32::from_le_bytes),
                coeffs: decode::<4, u32>(&bytes[ks], u32::from_le_bytes),
            })
        });
        finish(p, matrices)
    }

    /// Reads the file form written under `key` from `image`, checking everything as
    /// [`ConstraintMatrices::from_file_bytes`] does, and keeps `A, B, C` in place there (the
    /// matrices hold `image`): for a mapped file, no copy, and pages the system can drop and
    /// read again. Where the image cannot be read in place (not 8-byte aligned in memory, or a
    /// big-endian machine) they are copied.
    pub fn from_file_image(image: FileImage, key: &str) -> Result<Self, MatricesFileError> {
        let bytes = image.bytes();
        if cfg!(target_endian = "big") || bytes.as_ptr().align_offset(8) != 0 {
            return Self::from_file_bytes(bytes, key);
        }
        let p = parse(bytes, key)?;
        let matrices = p.matrices.clone().map(|[row_start, cols, coeffs]| Matrix::InImage { image: image.clone(), row_start, cols, coeffs });
        finish(p, matrices)
    }
}

/// Checks everything but the matrices' contents and decodes the small parts.
fn parse(bytes: &[u8], key: &str) -> Result<Parsed, MatricesFileError> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(MatricesFileError::Magic);
    }
    let body = bytes.len().checked_sub(8).filter(|&b| b >= MAGIC.len()).ok_or(MatricesFileError::Truncated("checksum"))?;
    let mut r = Reader { bytes: &bytes[MAGIC.len()..body], at: MAGIC.len() };
    let key_len = r.size("key")?;
    let found = String::from_utf8_lossy(r.take(key_len, "key")?).into_owned();
    if found != key {
        return Err(MatricesFileError::Stale { found, want: key.to_string() });
    }
    let sum = u64::from_le_bytes(bytes[body..].try_into().expect("8 bytes"));
    if xxhash_rust::xxh3::xxh3_64(&bytes[..body]) != sum {
        return Err(MatricesFileError::Checksum);
    }
    r.pad("key")?;
    let (num_inputs, num_aux, rows, table_len) = (r.size("sizes")?, r.size("sizes")?, r.size("sizes")?, r.size("sizes")?);
    let mut shapes = [(0usize, 0usize); 3];
    for s in &mut shapes {
        *s = (r.size("matrix sizes")?, r.size("matrix sizes")?);
    }
    let density_lens = [r.size("density sizes")?, r.size("density sizes")?, r.size("density sizes")?];
    let mut matrices = Vec::with_capacity(3);
    for &(offsets, entries) in &shapes {
        matrices.push([r.array::<8>(offsets, "row offsets")?, r.array::<4>(entries, "columns")?, r.array::<4>(entries, "coefficient indices")?]);
    }
    let table = r.array::<32>(table_len, "coefficients")?;
    let mut coeffs = Vec::with_capacity(table_len);
    for repr in bytes[table].chunks_exact(32) {
        let c = Option::<Scalar>::from(Scalar::from_repr(repr.try_into().expect("32 bytes")))
            .ok_or_else(|| MatricesFileError::Invalid("a coefficient is not a canonical scalar".into()))?;
        coeffs.push(c);
    }
    let mut densities = Vec::with_capacity(3);
    for len in density_lens {
        let words = decode::<8, u64>(&bytes[r.array::<8>(len.div_ceil(64), "densities")?], u64::from_le_bytes);
        densities.push(
            DensityBitmap::from_words(&words, len, heap())?.ok_or_else(|| MatricesFileError::Invalid("a density bitmap has bits past its length".into()))?,
        );
    }
    if !r.bytes.is_empty() {
        return Err(MatricesFileError::Invalid(format!("{} bytes after the densities", r.bytes.len())));
    }
    if density_lens != [num_aux, num_inputs, num_aux] {
        return Err(MatricesFileError::Invalid(format!("densities of {density_lens:?} bits for {num_inputs} inputs and {num_aux} aux")));
    }
    if table_len < 2 || coeffs[0] != Scalar::from(1u64) || coeffs[1] != -Scalar::from(1u64) {
        return Err(MatricesFileError::Invalid("the coefficient table does not start with 1, -1".into()));
    }
    let matrices: [Arrays; 3] = matrices.try_into().expect("three matrices");
    let densities: [DensityBitmap; 3] = densities.try_into().map_err(|_| ()).expect("three densities");
    Ok(Parsed { num_inputs, num_aux, rows, matrices, coeffs, densities })
}

/// Checks the matrices' contents against the sizes and assembles them.
fn finish(p: Parsed, matrices: [Matrix; 3]) -> Result<ConstraintMatrices, MatricesFileError> {
    for (name, m) in ["A", "B", "C"].iter().zip(&matrices) {
        check_csr(&m.view(), p.rows, p.num_inputs, p.num_aux, p.coeffs.len()).map_err(|e| MatricesFileError::Invalid(format!("matrix {name}: {e}")))?;
    }
    let [a, b, c] = matrices;
    let [a_aux_density, b_input_density, b_aux_density] = p.densities;
    Ok(ConstraintMatrices { a, b, c, coeffs: p.coeffs, num_inputs: p.num_inputs, num_aux: p.num_aux, a_aux_density, b_input_density, b_aux_density })
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
        let Matrix::Owned(a) = &mut m.a else { unreachable!("built in memory") };
        a.cols[1] = 9 | super::super::AUX;
        let mut bytes = m.to_file_bytes("k");
        resum(&mut bytes);
        assert!(matches!(ConstraintMatrices::from_file_bytes(&bytes, "k"), Err(MatricesFileError::Invalid(e)) if e.contains("matrix A")));
        assert!(matches!(ConstraintMatrices::from_file_image(image(&bytes, 0), "k"), Err(MatricesFileError::Invalid(e)) if e.contains("matrix A")));
        // Non-zero padding after the key ("k" is followed by 7 zero bytes at 17..24).
        let mut bytes = sample().to_file_bytes("k");
        bytes[20] = 1;
        resum(&mut bytes);
        assert!(matches!(ConstraintMatrices::from_file_bytes(&bytes, "k"), Err(MatricesFileError::Invalid(e)) if e.contains("padding after the key")));
    }

    /// Replaces the checksum with the right one for the (edited) contents.
    fn resum(bytes: &mut [u8]) {
        let body = bytes.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..body]);
        bytes[body..].copy_from_slice(&sum.to_le_bytes());
    }

    /// `bytes` as an image starting `shift` bytes past an 8-byte boundary.
    fn image(bytes: &[u8], shift: usize) -> FileImage {
        struct Words(Vec<u64>, usize, usize);
        impl AsRef<[u8]> for Words {
            fn as_ref(&self) -> &[u8] {
                &bytemuck::cast_slice(&self.0)[self.1..self.1 + self.2]
            }
        }
        let mut words = vec![0u64; (bytes.len() + shift).div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[shift..shift + bytes.len()].copy_from_slice(bytes);
        FileImage(std::sync::Arc::new(Words(words, shift, bytes.len())))
    }

    #[test]
    fn an_aligned_image_is_read_in_place_and_any_other_is_copied() {
        let m = sample();
        let bytes = m.to_file_bytes("sample v1");
        let eval = |x: &ConstraintMatrices| {
            let (input, aux) = ([Scalar::from(3u64), Scalar::from(5u64)], [Scalar::from(7u64), Scalar::from(11u64), Scalar::from(13u64)]);
            let (mut a, mut b, mut c) = ([Scalar::ZERO; 2], [Scalar::ZERO; 2], [Scalar::ZERO; 2]);
            x.evaluate_rows(0..2, &input, &aux, &mut a, &mut b, &mut c);
            (a, b, c)
        };
        let in_place = ConstraintMatrices::from_file_image(image(&bytes, 0), "sample v1").unwrap();
        assert!(in_place.in_file_image());
        assert!(same(&in_place, &m));
        assert_eq!(eval(&in_place), eval(&m));
        // Its own file form is the same bytes.
        assert_eq!(in_place.to_file_bytes("sample v1"), bytes);
        let copied = ConstraintMatrices::from_file_image(image(&bytes, 4), "sample v1").unwrap();
        assert!(!copied.in_file_image(), "an image off an 8-byte boundary is copied");
        assert!(same(&copied, &m));
        assert!(!ConstraintMatrices::from_file_bytes(&bytes, "sample v1").unwrap().in_file_image());
        // Every array starts 8-byte aligned in the file.
        let p = parse(&bytes, "sample v1").unwrap();
        assert!(p.matrices.iter().flatten().all(|r| r.start % 8 == 0));
        // Every truncation and every flipped byte is refused in place too.
        for n in 0..bytes.len() {
            assert!(ConstraintMatrices::from_file_image(image(&bytes[..n], 0), "sample v1").is_err(), "truncated to {n} bytes");
            let mut bad = bytes.clone();
            bad[n] ^= 0x10;
            assert!(ConstraintMatrices::from_file_image(image(&bad, 0), "sample v1").is_err(), "byte {n} flipped");
        }
    }
}
