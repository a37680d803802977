//! Fuzzes manifest loading, defaulting and validation: any bytes must give jobs or located
//! diagnostics, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trainctl_api::manifest;

fuzz_target!(|data: &[u8]| {
    let manifests = manifest::load_bytes("fuzz.yaml", data);
    for diagnostic in &manifests.diagnostics {
        assert!(diagnostic.position.line >= 1 && diagnostic.position.column >= 1);
        let _ = diagnostic.to_string();
    }
});
