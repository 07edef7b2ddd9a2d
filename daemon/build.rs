//! Compiles the cuzk.v1 proto with protox (pure Rust: no system `protoc`) and generates the
//! tonic client and server, using our codec so undecodable requests get INVALID_ARGUMENT.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    // The descriptor set too: a test pins every message's field names, numbers and types.
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("cuzk_v1_descriptor.bin"), prost::Message::encode_to_vec(&fds))?;
    tonic_build::configure().codec_path("crate::codec::StrictCodec").compile_fds(fds)?;
    Ok(())
}
