//! `trainctl crd`: the CustomResourceDefinitions, generated from the API types.

use std::process::ExitCode;

use anyhow::Context;
use trainctl_api::JobKind;

use crate::cli::{CrdArgs, Format};
use crate::output;

/// Prints every CRD, or writes `kubeflow.org_<plural>.yaml` files into `--dir`.
pub fn run(args: &CrdArgs) -> anyhow::Result<ExitCode> {
    let Some(dir) = &args.dir else {
        output::print_all(&trainctl_api::crd::all(), args.output)?;
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for kind in JobKind::ALL {
        let path = dir.join(format!("{}_{}.yaml", trainctl_api::GROUP, kind.plural()));
        let mut text = Vec::new();
        output::write(&mut text, &trainctl_api::crd::crd(kind), Format::Yaml)?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
