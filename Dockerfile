# crd-apiserver image: build with the Rust toolchain, run on a slim Debian.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin crd-apiserver

FROM debian:bookworm-slim
COPY --from=build /src/target/release/crd-apiserver /usr/local/bin/crd-apiserver
EXPOSE 8080
ENTRYPOINT ["crd-apiserver"]
CMD ["--bind-address", "0.0.0.0", "--port", "8080"]
