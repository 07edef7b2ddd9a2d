//! The Filecoin commands: `cuzk setup --filecoin`, `cuzk gen-vanilla`, `cuzk fil-verify` and
//! `cuzk fil-reference`, and reading request files.

use std::path::{Path, PathBuf};
use std::time::Instant;

use cuzk_circuits_filecoin::{fixtures, params, reference, synthetic_request, verify, FilError, FilKind, FilRequest, FilShape};

use crate::CliError;

fn fil(e: FilError) -> CliError {
    CliError::Usage(e.to_string())
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CliError + '_ {
    move |source| CliError::Io { path: path.into(), source }
}

/// Parses a sector size: `2k`, `8m`, `512m`, `32g`, `64g` or a number of bytes.
pub fn sector_size(s: &str) -> Result<u64, CliError> {
    let bad = || CliError::Usage(format!("bad sector size {s:?} (2k, 8m, 512m, 32g, 64g)"));
    let (num, mult) = match s.to_ascii_lowercase().chars().last() {
        Some('k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('m') => (&s[..s.len() - 1], 1 << 20),
        Some('g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().and_then(|n| n.checked_mul(mult)).ok_or_else(bad)
}

/// Circuit ids from the command line: `porep-2k`, `wpost-32g`, or `all-2k` for every kind.
pub fn circuit_ids(list: &[String]) -> Result<Vec<FilShape>, CliError> {
    let mut out = Vec::new();
    for s in list {
        match s.strip_prefix("all-") {
            Some(size) => out.extend(FilShape::all_at(sector_size(size)?).map_err(fil)?),
            None => out.push(
                FilShape::parse(s)
                    .ok_or_else(|| CliError::Usage(format!("unknown Filecoin circuit {s:?} (porep-2k, snap-2k, wpost-2k, winning-2k, all-2k, …)")))?,
            ),
        }
    }
    Ok(out)
}

/// `cuzk setup --filecoin …`: random parameters and verifying keys in the Filecoin cache; with
/// `timing_only`, timing-only parameters of the real layout instead (sized by recording the
/// circuit's matrices on every core; written at disk speed, any sector size).
pub fn setup(dir: &Path, ids: &[String], force: bool, timing_only: bool) -> Result<(), CliError> {
    for id in circuit_ids(ids)? {
        let t = Instant::now();
        let f = if timing_only {
            eprintln!("writing timing-only parameters (pseudo-random points: proofs made with them do not verify) for {} in {}", id.id(), dir.display());
            params::write_timing_only(dir, id, force, |blank| timing_queries(id, blank)).map_err(fil)?
        } else {
            eprintln!("generating parameters for {} in {}", id.id(), dir.display());
            params::generate(dir, id, force, &mut rand::rngs::OsRng).map_err(fil)?
        };
        let bytes = std::fs::metadata(&f.params).map_err(io(&f.params))?.len();
        println!("{}: {} ({bytes} bytes, {:.1} s)", id.id(), f.params.display(), t.elapsed().as_secs_f64());
    }
    Ok(())
}

/// The timing-only queries of `id`, from the matrices its blank circuit records.
fn timing_queries(id: FilShape, blank: cuzk_circuits_filecoin::PartitionCircuit) -> Result<cuzk_setup::timing::TimingQueries, String> {
    let t = Instant::now();
    let partition = cuzk_core::circuit::Partition {
        shape: crate::circuits::CircuitShape::Filecoin(id).key(),
        check: cuzk_core::circuit::WitnessCheck::Ignore,
        circuit: blank,
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let m = cuzk_worker::matrices::record_partition_parallel(&partition, threads).map_err(|e| format!("recording the constraint matrices: {e}"))?;
    let q = cuzk_setup::timing::TimingQueries::of(&m).map_err(|e| e.to_string())?;
    eprintln!(
        "{}: {} constraints recorded in {:.1} s; the file takes {} bytes",
        id.id(),
        m.num_constraints(),
        t.elapsed().as_secs_f64(),
        q.lengths.file_bytes()
    );
    Ok(q)
}

/// `cuzk gen-vanilla`: seals a sector and writes one request per kind into `out`, named by
/// circuit id (`porep-2k.json`, `snap-2k.json`, `wpost-2k.json`, `winning-2k.json`), in Curio's
/// encodings; prints each path. With `synthetic` (`--synthetic`), seals nothing and writes
/// synthetic requests of any sector size instead (`cuzk_circuits_filecoin::synthetic_request`:
/// the real structure, random values; they do not verify, so the daemon accepts them only in its
/// mode that leaves witnesses unchecked and withholds proofs).
pub fn gen_vanilla(out: &Path, size: u64, seed: u64, synthetic: bool) -> Result<Vec<PathBuf>, CliError> {
    std::fs::create_dir_all(out).map_err(io(out))?;
    let mut paths = Vec::new();
    if synthetic {
        for kind in FilKind::ALL {
            let t = Instant::now();
            let r = synthetic_request(kind, size, seed).map_err(fil)?;
            let path = write_request(out, r)?;
            let bytes = std::fs::metadata(&path).map_err(io(&path))?.len();
            eprintln!("{}: synthetic (does not verify), {bytes} bytes, made in {:.1} s", path.display(), t.elapsed().as_secs_f64());
            paths.push(path);
        }
        return Ok(paths);
    }
    let t = Instant::now();
    let reqs = fixtures::generate(out, size, seed).map_err(fil)?;
    eprintln!("sealed a {size}-byte sector and made the vanilla proofs in {:.1} s", t.elapsed().as_secs_f64());
    for r in reqs {
        paths.push(write_request(out, r)?);
    }
    Ok(paths)
}

/// Writes a request into `out` as `<circuit id>.json` in the encodings Curio sends (the C1
/// output in Curio's wrapper, bincode elements, raw commitments) and prints its path.
fn write_request(out: &Path, r: FilRequest) -> Result<PathBuf, CliError> {
    let r = crate::client::curio::from_fixture(r).map_err(fil)?;
    let id = cuzk_circuits_filecoin::circuit_of(r.kind, r.registered_proof).map_err(fil)?;
    let path = out.join(format!("{}.json", id.id()));
    let text = serde_json::to_vec_pretty(&r).map_err(|e| CliError::Usage(e.to_string()))?;
    std::fs::write(&path, text).map_err(io(&path))?;
    println!("{}", path.display());
    Ok(path)
}

/// `cuzk fil-verify`: Filecoin's verifier on a request and a proof file; an error unless valid.
pub fn verify_file(dir: &Path, request: &Path, proof: &Path) -> Result<(), CliError> {
    verify::use_cache_dir(dir);
    let req = crate::client::curio::read_request(request)?;
    let bytes = std::fs::read(proof).map_err(io(proof))?;
    let t = Instant::now();
    let ok = verify::verify(&req, &bytes).map_err(fil)?;
    println!("{}: {} ({} bytes, verified in {:.1} ms)", request.display(), if ok { "VALID" } else { "INVALID" }, bytes.len(), t.elapsed().as_secs_f64() * 1e3);
    if ok {
        Ok(())
    } else {
        Err(CliError::InvalidProof)
    }
}

/// `cuzk fil-reference`: proves with `filecoin-proofs`' own CPU prover, verifies, prints the time.
pub fn reference_prove(dir: &Path, request: &Path, out: Option<&Path>) -> Result<(), CliError> {
    verify::use_cache_dir(dir);
    let req = crate::client::curio::read_request(request)?;
    let t = Instant::now();
    let proof = reference::prove(&req).map_err(fil)?;
    let took = t.elapsed();
    let ok = verify::verify(&req, &proof).map_err(fil)?;
    println!("{}: filecoin-proofs proved in {:.3} s ({} bytes), {}", request.display(), took.as_secs_f64(), proof.len(), if ok { "VALID" } else { "INVALID" });
    if let Some(p) = out {
        std::fs::write(p, &proof).map_err(io(p))?;
    }
    if ok {
        Ok(())
    } else {
        Err(CliError::InvalidProof)
    }
}

/// `cuzk fil-synth-times`: synthesis time per constraint of a request's partition 0, plain
/// (our `RecordingCs`) against the constraint-matrix cache (witness generation plus sparse
/// products); the median of `reps` runs each. Checks the two records are identical.
pub fn synth_times(request: &Path, reps: usize) -> Result<String, CliError> {
    use cuzk_core::alloc::heap;
    use cuzk_core::compiled::CompiledSynthesis;
    use cuzk_core::synth::SizeHint;
    let req = crate::client::curio::read_request(request)?;
    let p = cuzk_circuits_filecoin::prepare(&req).map_err(fil)?;
    let c = p.partition(0);
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let reps = reps.max(1);
    let mut plain = Vec::new();
    let mut last = None;
    for _ in 0..reps {
        let t = Instant::now();
        let s = c.synthesize_in_full(heap(), SizeHint::default())?;
        plain.push(t.elapsed().as_secs_f64());
        last = Some(s);
    }
    let s = last.ok_or_else(|| CliError::Usage("no run".into()))?;
    let t = Instant::now();
    let m = c.record()?;
    let record = t.elapsed().as_secs_f64();
    let mut cached = Vec::new();
    let mut same = true;
    for _ in 0..reps {
        let t = Instant::now();
        let q = cuzk_worker::matrices::synthesize(&m, c.clone(), heap())?;
        cached.push(t.elapsed().as_secs_f64());
        same &= q.a[..] == s.a[..] && q.b[..] == s.b[..] && q.c[..] == s.c[..] && q.aux[..] == s.aux[..];
    }
    let n = s.num_constraints() as f64;
    let (pm, cm) = (median(plain), median(cached));
    let threads = rayon::current_num_threads();
    let o = format!(
        "{}: {} constraints, {} aux; plain {:.3} s ({:.0} ns/constraint); matrices recorded in {:.3} s ({} entries, {:.0} MiB); cached {:.3} s ({:.0} ns/constraint, {threads} threads); {:.2}x; records identical: {same}",
        p.circuit.id(),
        s.num_constraints(),
        s.aux.len(),
        pm,
        pm / n * 1e9,
        record,
        m.num_entries(),
        m.heap_bytes() as f64 / (1 << 20) as f64,
        cm,
        cm / n * 1e9,
        pm / cm
    );
    println!("{o}");
    if !same {
        return Err(CliError::Usage("the cached synthesis differs from the plain one".into()));
    }
    Ok(o)
}
