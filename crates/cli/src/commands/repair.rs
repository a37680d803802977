//! `trainctl repair`: the state database checked, and repaired when it is damaged
//! (`trainctl_local::store::repair`).

use std::path::Path;
use std::process::ExitCode;

use jiff::Timestamp;
use trainctl_local::store::DATABASE_FILE;
use trainctl_local::store::repair::{self, Health, Thoroughness};

use crate::cli::RepairArgs;
use crate::state::state_dir;
use crate::table::Table;

/// Checks, and unless `--check` repairs, the state database of `state`.
pub fn run(args: &RepairArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    let dir = state_dir(state)?;
    // No server writes the database meanwhile (it would keep the damaged file open).
    let _lock = trainctl_server::discovery::lock(&dir)?;
    let database = dir.join(DATABASE_FILE);
    if args.check {
        return Ok(match repair::check(&dir, Thoroughness::Whole)? {
            Health::Sound => {
                println!("the state database {} is sound", database.display());
                ExitCode::SUCCESS
            }
            Health::Damaged(problems) => {
                println!("the state database {} is damaged:", database.display());
                for problem in problems {
                    println!("  {problem}");
                }
                println!("repair it with `trainctl repair` (what can be read is kept)");
                ExitCode::FAILURE
            }
        });
    }
    let Some(repaired) = repair::repair(&dir, Timestamp::now())? else {
        println!(
            "the state database {} is sound: nothing to repair",
            database.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    println!("the state database {} was damaged:", database.display());
    for problem in &repaired.problems {
        println!("  {problem}");
    }
    let mut table = Table::new(["TABLE", "ROWS KEPT", "DAMAGED"]);
    for (name, rows, damaged) in &repaired.tables {
        let damaged = if *damaged { "yes: rows lost" } else { "no" };
        table.row([name.clone(), rows.to_string(), damaged.to_owned()]);
    }
    print!("{}", table.render());
    if repaired.orphans > 0 {
        println!(
            "{} rows dropped: their job was in the damaged part",
            repaired.orphans
        );
    }
    println!(
        "repaired: a new {DATABASE_FILE} holds what was kept; the damaged file is {}",
        repaired.damaged.display()
    );
    Ok(ExitCode::SUCCESS)
}
