//! Generates the etcd v3 API client from `proto/etcd/*.proto` with a pure-Rust
//! protobuf compiler (protox), so building needs no `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/etcd");
    let descriptors = protox::compile(["etcd/rpc.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_server(false)
        .compile_fds(descriptors)?;
    Ok(())
}
