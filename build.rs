//! Checks the built-in embedding model against the sha256 recorded beside it.
//!
//! The model ships inside the binary (`include_bytes!` in `src/semantic`), and its
//! fingerprint, which the index stores to know when to rebuild its vectors, is read from the
//! `.sha256` file. A model file changed without its digest, or damaged in a checkout (a Git
//! LFS pointer, a line-ending conversion), would ship a model that does not match its
//! fingerprint: the build stops here instead.

// Cargo reads a build script's instructions from its standard output.
#![allow(clippy::print_stdout, reason = "build script instructions go to stdout")]

use std::path::Path;

use sha2::{Digest, Sha256};

const MODEL: &str = "assets/model/static-minilm-l6.safetensors";
const DIGEST: &str = "assets/model/static-minilm-l6.safetensors.sha256";

fn main() {
    println!("cargo::rerun-if-changed={MODEL}");
    println!("cargo::rerun-if-changed={DIGEST}");
    if let Err(message) = check() {
        // Cargo stops the build after the script and shows this line as its error.
        println!("cargo::error={message}");
    }
}

/// Whether the model's sha256 is the recorded one; the error is one line.
fn check() -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(root.join(MODEL)).map_err(|e| format!("cannot read {MODEL}: {e}"))?;
    let recorded = std::fs::read_to_string(root.join(DIGEST)).map_err(|e| format!("cannot read {DIGEST}: {e}"))?;
    // The file is `sha256sum`'s output: the digest, two spaces, the file name.
    let recorded = recorded.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
    let actual: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    if recorded != actual {
        return Err(format!(
            "{MODEL} has sha256 {actual}, but {DIGEST} records {recorded:?}: the model file is damaged \
             or was changed without its digest (a Git LFS pointer or a line-ending conversion does this; \
             restore the file, or record the new digest if the model was rebuilt on purpose)"
        ));
    }
    Ok(())
}
