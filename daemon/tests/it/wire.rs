//! The wire, pinned: every message, field, enum value and method of the `cuzk.v1` proto that
//! Curio's Go client is generated from (`extern/cuzk/cuzk-proto/proto/cuzk/v1/proving.proto` and
//! `lib/cuzk/proving.pb.go` in filecoin-project/curio), with its number, type and label, read
//! back from the descriptor this daemon is compiled from. Our own additions must sit at numbers
//! of 100 and above, where they cannot collide with Curio's.

use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorSet};

/// A field as Curio ships it: name, number, type, repeated, type name (messages and enums).
type Field = (&'static str, i32, Type, bool, &'static str);

/// `(message, fields)`, as Curio ships them.
fn curio_messages() -> Vec<(&'static str, Vec<Field>)> {
    use Type::*;
    vec![
        (
            "SubmitProofRequest",
            vec![
                ("request_id", 1, String, false, ""),
                ("proof_kind", 2, Enum, false, ".cuzk.v1.ProofKind"),
                ("sector_size", 3, Uint64, false, ""),
                ("registered_proof", 4, Uint64, false, ""),
                ("priority", 5, Enum, false, ".cuzk.v1.Priority"),
                ("vanilla_proof", 10, Bytes, false, ""),
                ("vanilla_proofs", 11, Bytes, true, ""),
                ("sector_number", 20, Uint64, false, ""),
                ("miner_id", 21, Uint64, false, ""),
                ("randomness", 22, Bytes, false, ""),
                ("partition_index", 23, Uint32, false, ""),
                ("comm_r_old", 30, Bytes, false, ""),
                ("comm_r_new", 31, Bytes, false, ""),
                ("comm_d_new", 32, Bytes, false, ""),
            ],
        ),
        ("SubmitProofResponse", vec![("job_id", 1, String, false, ""), ("queue_position", 2, Uint32, false, ""), ("assigned_gpu", 3, String, false, "")]),
        ("AwaitProofRequest", vec![("job_id", 1, String, false, ""), ("timeout_ms", 2, Uint64, false, "")]),
        (
            "AwaitProofResponse",
            vec![
                ("job_id", 1, String, false, ""),
                ("status", 2, Enum, false, ".cuzk.v1.AwaitProofResponse.Status"),
                ("proof", 3, Bytes, false, ""),
                ("error_message", 4, String, false, ""),
                ("queue_wait_ms", 10, Uint64, false, ""),
                ("srs_load_ms", 11, Uint64, false, ""),
                ("synthesis_ms", 12, Uint64, false, ""),
                ("gpu_compute_ms", 13, Uint64, false, ""),
                ("total_ms", 14, Uint64, false, ""),
            ],
        ),
        ("ProveRequest", vec![("submit", 1, Message, false, ".cuzk.v1.SubmitProofRequest")]),
        ("ProveResponse", vec![("result", 1, Message, false, ".cuzk.v1.AwaitProofResponse")]),
        ("CancelProofRequest", vec![("job_id", 1, String, false, "")]),
        ("CancelProofResponse", vec![("was_running", 1, Bool, false, "")]),
        ("GetStatusRequest", vec![]),
        (
            "GetStatusResponse",
            vec![
                ("gpus", 1, Message, true, ".cuzk.v1.GPUStatus"),
                ("loaded_srs", 2, Message, true, ".cuzk.v1.SRSStatus"),
                ("queues", 3, Message, true, ".cuzk.v1.QueueStatus"),
                ("total_proofs_completed", 4, Uint64, false, ""),
                ("total_proofs_failed", 5, Uint64, false, ""),
                ("uptime_seconds", 6, Uint64, false, ""),
                ("pinned_memory_bytes", 7, Uint64, false, ""),
                ("pinned_memory_limit_bytes", 8, Uint64, false, ""),
            ],
        ),
        (
            "GPUStatus",
            vec![
                ("ordinal", 1, Uint32, false, ""),
                ("name", 2, String, false, ""),
                ("vram_total_bytes", 3, Uint64, false, ""),
                ("vram_free_bytes", 4, Uint64, false, ""),
                ("current_job_id", 5, String, false, ""),
                ("current_proof_kind", 6, String, false, ""),
            ],
        ),
        (
            "SRSStatus",
            vec![
                ("circuit_id", 1, String, false, ""),
                ("tier", 2, Enum, false, ".cuzk.v1.SRSStatus.Tier"),
                ("size_bytes", 3, Uint64, false, ""),
                ("ref_count", 4, Uint32, false, ""),
            ],
        ),
        ("QueueStatus", vec![("proof_kind", 1, String, false, ""), ("pending", 2, Uint32, false, ""), ("in_progress", 3, Uint32, false, "")]),
        ("PreloadSrsRequest", vec![("circuit_id", 1, String, false, "")]),
        ("PreloadSrsResponse", vec![("already_loaded", 1, Bool, false, ""), ("load_time_ms", 2, Uint64, false, "")]),
        ("EvictSrsRequest", vec![("circuit_id", 1, String, false, "")]),
        ("EvictSrsResponse", vec![("was_loaded", 1, Bool, false, ""), ("freed_bytes", 2, Uint64, false, "")]),
        ("GetMetricsRequest", vec![]),
        ("GetMetricsResponse", vec![("prometheus_text", 1, String, false, "")]),
    ]
}

/// `(enum, [(value, number)])`; nested enums as `Message.Enum`.
fn curio_enums() -> Vec<(&'static str, Vec<(&'static str, i32)>)> {
    vec![
        (
            "ProofKind",
            vec![("PROOF_KIND_UNSPECIFIED", 0), ("POREP_SEAL_COMMIT", 1), ("SNAP_DEALS_UPDATE", 2), ("WINDOW_POST_PARTITION", 3), ("WINNING_POST", 4)],
        ),
        ("Priority", vec![("PRIORITY_UNSPECIFIED", 0), ("LOW", 1), ("NORMAL", 2), ("HIGH", 3), ("CRITICAL", 4)]),
        ("AwaitProofResponse.Status", vec![("UNKNOWN", 0), ("COMPLETED", 1), ("FAILED", 2), ("CANCELLED", 3), ("TIMEOUT", 4)]),
        ("SRSStatus.Tier", vec![("HOT", 0), ("WARM", 1), ("COLD", 2)]),
    ]
}

/// `(method, input, output)` of `cuzk.v1.ProvingEngine`.
const CURIO_METHODS: [(&str, &str, &str); 8] = [
    ("SubmitProof", "SubmitProofRequest", "SubmitProofResponse"),
    ("AwaitProof", "AwaitProofRequest", "AwaitProofResponse"),
    ("Prove", "ProveRequest", "ProveResponse"),
    ("CancelProof", "CancelProofRequest", "CancelProofResponse"),
    ("GetStatus", "GetStatusRequest", "GetStatusResponse"),
    ("GetMetrics", "GetMetricsRequest", "GetMetricsResponse"),
    ("PreloadSRS", "PreloadSrsRequest", "PreloadSrsResponse"),
    ("EvictSRS", "EvictSrsRequest", "EvictSrsResponse"),
];

fn file() -> prost_types::FileDescriptorProto {
    let set = FileDescriptorSet::decode(cuzk_daemon::proto::FILE_DESCRIPTOR_SET).expect("descriptor set");
    set.file.into_iter().find(|f| f.package() == "cuzk.v1").expect("cuzk.v1 file")
}

fn message<'a>(f: &'a prost_types::FileDescriptorProto, name: &str) -> &'a DescriptorProto {
    f.message_type.iter().find(|m| m.name() == name).unwrap_or_else(|| panic!("message {name} is missing"))
}

fn enum_of<'a>(f: &'a prost_types::FileDescriptorProto, path: &str) -> &'a EnumDescriptorProto {
    match path.split_once('.') {
        Some((m, e)) => message(f, m).enum_type.iter().find(|x| x.name() == e),
        None => f.enum_type.iter().find(|x| x.name() == path),
    }
    .unwrap_or_else(|| panic!("enum {path} is missing"))
}

#[test]
fn every_curio_field_has_its_name_number_and_type() {
    let f = file();
    assert_eq!(f.syntax(), "proto3");
    for (name, fields) in curio_messages() {
        let m = message(&f, name);
        for (field, number, ty, repeated, type_name) in &fields {
            let got = m.field.iter().find(|x| x.name() == *field).unwrap_or_else(|| panic!("{name}.{field} is missing"));
            assert_eq!(got.number(), *number, "{name}.{field} number");
            assert_eq!(got.r#type(), *ty, "{name}.{field} type");
            assert_eq!(got.label() == Label::Repeated, *repeated, "{name}.{field} repeated");
            if !type_name.is_empty() {
                assert_eq!(got.type_name(), *type_name, "{name}.{field} type name");
            }
            assert!(got.oneof_index.is_none() && !got.proto3_optional(), "{name}.{field} is a plain field");
        }
        for extra in m.field.iter().filter(|x| !fields.iter().any(|(n, ..)| *n == x.name())) {
            assert!(extra.number() >= 100, "{name}.{} (field {}) is ours but sits below 100, where Curio's fields live", extra.name(), extra.number());
        }
    }
}

#[test]
fn every_curio_enum_value_and_method_is_there() {
    let f = file();
    for (name, values) in curio_enums() {
        let e = enum_of(&f, name);
        for (v, n) in &values {
            let got = e.value.iter().find(|x| x.name() == *v).unwrap_or_else(|| panic!("{name}.{v} is missing"));
            assert_eq!(got.number(), *n, "{name}.{v}");
        }
        for extra in e.value.iter().filter(|x| !values.iter().any(|(n, _)| *n == x.name())) {
            assert!(extra.number() >= 100, "{name}.{} is ours but numbered {}", extra.name(), extra.number());
        }
    }
    let svc = f.service.iter().find(|s| s.name() == "ProvingEngine").expect("service ProvingEngine");
    for (m, input, output) in CURIO_METHODS {
        let got = svc.method.iter().find(|x| x.name() == m).unwrap_or_else(|| panic!("method {m} is missing"));
        assert_eq!(got.input_type(), format!(".cuzk.v1.{input}"), "{m} input");
        assert_eq!(got.output_type(), format!(".cuzk.v1.{output}"), "{m} output");
        assert!(!got.client_streaming() && !got.server_streaming(), "{m} is unary");
    }
}

/// The same fields as encoded bytes: a request Curio's Go code would marshal (fields in number
/// order, proto3 defaults omitted) decodes here field for field, and ours encodes it back
/// identically.
#[test]
fn a_curio_request_round_trips_byte_for_byte() {
    // Hand-encoded: each field is a varint tag (number << 3 | wire type: 0 varint, 2 length
    // delimited), then a varint value or a varint length and the bytes.
    fn varint(b: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            b.push(v as u8 | 0x80);
            v >>= 7;
        }
        b.push(v as u8);
    }
    let ld = |b: &mut Vec<u8>, field: u64, v: &[u8]| {
        varint(b, field << 3 | 2);
        varint(b, v.len() as u64);
        b.extend_from_slice(v);
    };
    let vi = |b: &mut Vec<u8>, field: u64, v: u64| {
        varint(b, field << 3);
        varint(b, v);
    };
    let mut b = Vec::new();
    ld(&mut b, 1, b"snap-1000-42");
    vi(&mut b, 2, 2);
    vi(&mut b, 3, 2048);
    vi(&mut b, 5, 2);
    ld(&mut b, 11, &[1, 2, 3]);
    ld(&mut b, 11, &[4, 5]);
    vi(&mut b, 20, 42);
    vi(&mut b, 21, 1000);
    ld(&mut b, 30, &[7; 32]);
    ld(&mut b, 31, &[8; 32]);
    ld(&mut b, 32, &[9; 32]);
    assert_eq!(&b[b.len() - 35..b.len() - 32], &[0x82, 0x02, 32], "field 32's tag is two bytes");
    let r = cuzk_daemon::proto::SubmitProofRequest::decode(&b[..]).expect("decodes");
    assert_eq!(r.request_id, "snap-1000-42");
    assert_eq!(r.proof_kind, 2);
    assert_eq!(r.sector_size, 2048);
    assert_eq!(r.priority, 2);
    assert_eq!(r.vanilla_proofs, vec![vec![1, 2, 3], vec![4, 5]]);
    assert_eq!((r.sector_number, r.miner_id), (42, 1000));
    assert_eq!((r.comm_r_old[0], r.comm_r_new[0], r.comm_d_new[0]), (7, 8, 9));
    // registered_proof 0 (StackedDrg2KiBV1) is the proto3 default: Go omits it, so does prost.
    assert_eq!(r.registered_proof, 0);
    assert_eq!(r.encode_to_vec(), b);
}
