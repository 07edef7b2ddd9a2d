//! Test fixtures: seals a small sector with `filecoin-proofs` and writes a request of each
//! kind (vanilla proofs plus public data) for it.

use std::path::Path;

use filecoin_proofs::{
    add_piece, encode_into, generate_fallback_sector_challenges, generate_partition_proofs, generate_single_vanilla_proof, seal_commit_phase1,
    seal_pre_commit_phase1, seal_pre_commit_phase2, PaddedBytesAmount, PrivateReplicaInfo, SectorShape2KiB, SectorUpdateConfig, UnpaddedBytesAmount,
};
use rand::{Rng, SeedableRng};
use storage_proofs_core::sector::SectorId;

use crate::error::FilError;
use crate::ids::{porep_config, post_config, update_porep_config, FilKind, FilShape};
use crate::request::{prover_id, FilRequest};

/// Miner id used by the fixtures.
pub const MINER_ID: u64 = 1000;
/// Sector number used by the fixtures.
pub const SECTOR_NUMBER: u64 = 42;

/// A request of `kind` for [`MINER_ID`]'s sector [`SECTOR_NUMBER`] with no vanilla proofs or
/// other public data yet (the fixtures and the synthetic requests fill them in).
pub(crate) fn blank(kind: FilKind, registered_proof: u64) -> FilRequest {
    FilRequest {
        kind,
        registered_proof,
        vanilla_proof: Vec::new(),
        vanilla_proofs: Vec::new(),
        sector_number: SECTOR_NUMBER,
        miner_id: MINER_ID,
        randomness: Vec::new(),
        partition_index: 0,
        comm_r_old: Vec::new(),
        comm_r_new: Vec::new(),
        comm_d_new: Vec::new(),
    }
}

fn io(e: impl std::fmt::Display) -> FilError {
    FilError::Filecoin(format!("{e:#}"))
}

fn piece_file(dir: &Path, name: &str, size: u64, rng: &mut impl Rng) -> Result<(std::path::PathBuf, filecoin_proofs::PieceInfo), FilError> {
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(size));
    let data: Vec<u8> = (0..u64::from(unpadded)).map(|_| rng.gen()).collect();
    let path = dir.join(name);
    let f = std::fs::File::create(&path).map_err(io)?;
    let (info, _) = add_piece(&data[..], f, unpadded, &[]).map_err(io)?;
    Ok((path, info))
}

/// Seals a sector of `sector_size` (2 KiB, 8 MiB or 512 MiB) in a scratch directory under
/// `work` and returns one request of each kind for it, in [`FilKind::ALL`] order. Needs no
/// parameters. `seed` makes the data, ticket, seed and randomness reproducible.
///
/// The encodings are Curio's (see [`FilRequest`]) except for PoRep, whose `vanilla_proof` is
/// filecoin-proofs' own C1 output JSON, bare: [`crate::wrap_c1_like_curio`] (with
/// [`crate::ffi_layout`] or [`crate::supraseal_layout`]) turns it into what Curio sends.
/// SnapDeals and PoSt elements are `bincode::serialize` of filecoin-proofs' `PartitionProof`s
/// and `FallbackPoStSectorProof`s; the SnapDeals commitments are raw 32 bytes.
pub fn generate(work: &Path, sector_size: u64, seed: u64) -> Result<Vec<FilRequest>, FilError> {
    if sector_size > 1 << 29 {
        return Err(FilError::field("sector_size", "fixtures are made for 2 KiB, 8 MiB and 512 MiB sectors only"));
    }
    type Tree = SectorShape2KiB;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let dir = tempfile::tempdir_in(work).map_err(io)?;
    let d = dir.path();
    let ids = FilShape::all_at(sector_size)?;
    let seal_proof = ids[0].default_registered_proof();
    let config = porep_config(seal_proof)?;
    let prover = prover_id(MINER_ID);
    let sector = SectorId::from(SECTOR_NUMBER);
    let (staged, piece) = piece_file(d, "staged", sector_size, &mut rng)?;
    let (sealed, cache) = (d.join("sealed"), d.join("cache"));
    std::fs::create_dir_all(&cache).map_err(io)?;
    std::fs::File::create(&sealed).map_err(io)?;
    let mut ticket: [u8; 32] = rng.gen();
    ticket[31] &= 0x3f;
    let mut porep_seed: [u8; 32] = rng.gen();
    porep_seed[31] &= 0x3f;
    let p1 = seal_pre_commit_phase1::<_, _, _, Tree>(&config, &cache, &staged, &sealed, prover, sector, ticket, std::slice::from_ref(&piece)).map_err(io)?;
    let pre = seal_pre_commit_phase2(&config, p1, &cache, &sealed).map_err(io)?;
    let comm_r = pre.comm_r;
    let c1 = seal_commit_phase1::<_, Tree>(&config, &cache, &sealed, prover, sector, ticket, porep_seed, pre, &[piece]).map_err(io)?;
    let c1_bytes = serde_json::to_vec(&c1).map_err(io)?;

    let mut porep = blank(FilKind::PoRep, seal_proof);
    porep.vanilla_proof = c1_bytes;
    let mut out = vec![porep];

    // SnapDeals: encode new data into the sealed sector, then prove the update.
    let update_proof = ids[1].default_registered_proof();
    let uconfig = SectorUpdateConfig::from_porep_config(&update_porep_config(update_proof)?);
    let (new_staged, new_piece) = piece_file(d, "new-staged", sector_size, &mut rng)?;
    let (replica, replica_cache) = (d.join("update"), d.join("update-cache"));
    std::fs::create_dir_all(&replica_cache).map_err(io)?;
    std::fs::File::create(&replica).and_then(|f| f.set_len(sector_size)).map_err(io)?;
    let enc = encode_into::<Tree>(&uconfig, &replica, &replica_cache, &sealed, &cache, &new_staged, &[new_piece]).map_err(io)?;
    let parts = generate_partition_proofs::<Tree>(uconfig, comm_r, enc.comm_r_new, enc.comm_d_new, &sealed, &cache, &replica, &replica_cache).map_err(io)?;
    let mut snap = blank(FilKind::SnapDeals, update_proof);
    snap.vanilla_proofs = parts.iter().map(bincode::serialize).collect::<Result<_, _>>().map_err(io)?;
    snap.comm_r_old = comm_r.to_vec();
    snap.comm_r_new = enc.comm_r_new.to_vec();
    snap.comm_d_new = enc.comm_d_new.to_vec();
    out.push(snap);

    // PoSt over the original sealed sector.
    let replica_info = PrivateReplicaInfo::<Tree>::new(sealed.clone(), comm_r, cache.clone()).map_err(io)?;
    for kind in [FilKind::WindowPoSt, FilKind::WinningPoSt] {
        let id = ids.iter().find(|c| c.kind == kind).expect("all kinds").default_registered_proof();
        let pc = post_config(id, kind)?;
        let mut randomness: [u8; 32] = rng.gen();
        randomness[31] &= 0x3f;
        let challenges = generate_fallback_sector_challenges::<Tree>(&pc, &randomness, &[sector], prover).map_err(io)?;
        let ch = challenges.get(&sector).ok_or_else(|| io("no challenges for the sector"))?;
        let vanilla = generate_single_vanilla_proof::<Tree>(&pc, sector, &replica_info, ch).map_err(io)?;
        let mut r = blank(kind, id);
        r.vanilla_proofs = vec![bincode::serialize(&vanilla).map_err(io)?];
        r.randomness = randomness.to_vec();
        out.push(r);
    }
    Ok(out)
}
