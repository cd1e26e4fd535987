//! Compiles `proto/*.proto` into Rust types (prost) and protojson-style serde
//! impls (pbjson), with no system `protoc`: protox parses the files in Rust.

use std::error::Error;
use std::path::PathBuf;

const PROTO_FILES: [&str; 2] = ["api.proto", "realtime.proto"];

fn main() -> Result<(), Box<dyn Error>> {
    let proto_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("proto");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    println!("cargo:rerun-if-changed={}", proto_dir.display());

    // Imports are kept in the set: prost-build looks up every referenced message
    // (the well-known types too) to decide which derives it may add, and the
    // exported descriptor set is then self-contained.
    let mut compiler = protox::Compiler::new([&proto_dir])?;
    compiler
        .include_imports(true)
        .include_source_info(true)
        .open_files(PROTO_FILES)?;
    let descriptor_bytes = compiler.encode_file_descriptor_set();
    std::fs::write(out_dir.join("descriptor.bin"), &descriptor_bytes)?;

    prost_build::Config::new()
        // The well-known types come from pbjson-types (prost types with
        // protojson serde impls), except Timestamp: pbjson-types writes
        // "+00:00" where protojson writes "Z", so it is our own type.
        .compile_well_known_types()
        .extern_path(".google.protobuf", "::pbjson_types")
        .extern_path(".google.protobuf.Timestamp", "crate::Timestamp")
        // Match and party payloads are relayed as-is: `Bytes` makes that a
        // reference-count bump instead of a copy.
        .bytes(["."])
        // protojson writes map entries sorted by key; BTreeMap does the same.
        .btree_map(["."])
        .compile_fds(compiler.file_descriptor_set())?;

    // The JSON mapping Nakama clients see: protojson with UseProtoNames,
    // UseEnumNumbers and without EmitUnpopulated; the REST gateway also drops
    // unknown fields instead of failing.
    pbjson_build::Builder::new()
        .register_descriptors(&descriptor_bytes)?
        .extern_path(".google.protobuf", "::pbjson_types")
        .extern_path(".google.protobuf.Timestamp", "crate::Timestamp")
        .preserve_proto_field_names()
        .use_integers_for_enums()
        .ignore_unknown_fields()
        .btree_map(["."])
        .build(&[".nakama"])?;

    Ok(())
}
