//! What `top` prints. `top node`: this machine's resources (capacity, held by admitted jobs,
//! free), which replica holds each GPU, and the jobs waiting for room, in titled sections as
//! `describe` prints them. `top job`: the CPU, memory and GPUs of each running job (or replica),
//! as `kubectl top pod` prints pods.

use super::section;

use crate::table::Table;

/// This machine as `top node` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    /// CPU in millicores: what the machine offers, and what admitted jobs hold.
    pub cpu_millis: Amounts,
    /// Memory in bytes: the same (`capacity` is `u64::MAX` when it could not be detected).
    pub memory_bytes: Amounts,
    /// GPUs: how many the machine has, and how many admitted jobs hold.
    pub gpu_count: Amounts,
    /// Each GPU by index, with what holds it (`tfjob/default/mnist worker-0`), if anything.
    pub gpus: Vec<(u32, Option<String>)>,
    /// The jobs waiting for room, in the order they would be admitted.
    pub queue: Vec<Waiting>,
    /// What each namespace uses of its quotas (the server's; none without a server).
    pub quotas: Vec<QuotaLine>,
}

/// One resource of one quota: what its namespace uses of it, and what is left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaLine {
    /// The quota's namespace.
    pub namespace: String,
    /// The quota's name.
    pub quota: String,
    /// The `spec.hard` key (`requests.nvidia.com/gpu`).
    pub resource: String,
    /// What the namespace's admitted jobs use, as a quantity.
    pub used: String,
    /// The limit, as a quantity.
    pub hard: String,
    /// What is left, as a quantity.
    pub left: String,
}

/// A resource's capacity and what is held of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Amounts {
    /// What the machine offers.
    pub capacity: u64,
    /// What admitted jobs hold.
    pub held: u64,
}

/// A job waiting for room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// `tfjob/default/mnist`.
    pub job: String,
    /// What it waits for, as its `Created` condition says (`waiting for 2 GPUs, 0 free`).
    pub waiting_for: String,
}

impl NodeView {
    /// The text: the sections Resources, GPUs and Queue.
    pub fn render(&self) -> String {
        let mut resources = Table::new(["RESOURCE", "CAPACITY", "HELD", "FREE"]);
        resources.row(amounts_row("cpu", self.cpu_millis, cores));
        resources.row(if self.memory_bytes.capacity == u64::MAX {
            let unknown = || "unknown".to_owned();
            let held = memory(self.memory_bytes.held);
            ["memory".to_owned(), unknown(), held, unknown()]
        } else {
            amounts_row("memory", self.memory_bytes, memory)
        });
        resources.row(amounts_row("gpu", self.gpu_count, |count| {
            count.to_string()
        }));
        let mut gpus = Table::new(["GPU", "HELD BY"]);
        for (index, holder) in &self.gpus {
            gpus.row([
                index.to_string(),
                holder.clone().unwrap_or_else(|| "<free>".to_owned()),
            ]);
        }
        let mut queue = Table::new(["#", "JOB", "WAITING FOR"]);
        for (position, waiting) in self.queue.iter().enumerate() {
            queue.row([
                (position + 1).to_string(),
                waiting.job.clone(),
                waiting.waiting_for.clone(),
            ]);
        }
        let mut out = String::new();
        section(&mut out, "Resources:", Some(resources));
        section(&mut out, "GPUs:", (!self.gpus.is_empty()).then_some(gpus));
        section(
            &mut out,
            "Queue:",
            (!self.queue.is_empty()).then_some(queue),
        );
        if !self.quotas.is_empty() {
            let mut quotas = Table::new(["NAMESPACE", "QUOTA", "RESOURCE", "USED", "HARD", "LEFT"]);
            for line in &self.quotas {
                quotas.row([
                    line.namespace.clone(),
                    line.quota.clone(),
                    line.resource.clone(),
                    line.used.clone(),
                    line.hard.clone(),
                    line.left.clone(),
                ]);
            }
            section(&mut out, "Quotas:", Some(quotas));
        }
        out
    }
}

/// A resource's line: its name, capacity, what is held and what is free, each as `show` says.
fn amounts_row(name: &str, amounts: Amounts, show: fn(u64) -> String) -> [String; 4] {
    [
        name.to_owned(),
        show(amounts.capacity),
        show(amounts.held),
        show(amounts.capacity.saturating_sub(amounts.held)),
    ]
}

/// One line of `top job`: a job, or one replica of it.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRow {
    /// Its namespace.
    pub namespace: String,
    /// `tfjob/mnist`, or a replica's pod name (`mnist-worker-0`).
    pub name: String,
    /// CPU cores in use.
    pub cores: f64,
    /// Memory in use (the working set), in bytes.
    pub memory_bytes: u64,
    /// The GPUs it holds.
    pub gpus: Vec<u32>,
}

/// The table of `rows`: NAMESPACE shown `with_namespace`, NAME, CPU(cores), MEMORY(bytes), GPUS.
pub fn usage_table(rows: &[UsageRow], with_namespace: bool) -> Table {
    let mut table = Table::new(["NAMESPACE", "NAME", "CPU(cores)", "MEMORY(bytes)", "GPUS"]);
    for row in rows {
        table.row([
            row.namespace.clone(),
            row.name.clone(),
            format!("{:.2}", row.cores),
            memory(row.memory_bytes),
            super::replicas::gpus(&row.gpus),
        ]);
    }
    table.keep_columns(&[with_namespace]);
    table
}

/// Millicores as cores: `2`, `2.5`, `0.25`.
fn cores(millis: u64) -> String {
    let whole = millis / 1_000;
    let fraction = millis % 1_000;
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:03}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Bytes as kubectl's binary units: `1.5Gi` from 1 GiB up (one decimal, none when whole),
/// else `340Mi`; `0` for nothing.
fn memory(bytes: u64) -> String {
    const MI: u64 = 1 << 20;
    const GI: u64 = 1 << 30;
    if bytes == 0 {
        return "0".to_owned();
    }
    if bytes < GI {
        return format!("{}Mi", (bytes + MI / 2) / MI);
    }
    let tenths = (u128::from(bytes) * 10 + u128::from(GI) / 2) / u128::from(GI);
    if tenths % 10 == 0 {
        format!("{}Gi", tenths / 10)
    } else {
        format!("{}.{}Gi", tenths / 10, tenths % 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_read_as_kubectl_writes_them() {
        assert_eq!(cores(2_000), "2");
        assert_eq!(cores(2_500), "2.5");
        assert_eq!(cores(250), "0.25");
        assert_eq!(cores(1), "0.001");
        assert_eq!(memory(0), "0");
        assert_eq!(memory(340 << 20), "340Mi");
        assert_eq!(memory(1 << 30), "1Gi");
        assert_eq!(memory(3 << 29), "1.5Gi");
        assert_eq!(memory(25_087_000_000), "23.4Gi");
    }

    #[test]
    fn a_node_with_a_held_gpu_and_a_waiting_job() {
        let node = NodeView {
            cpu_millis: Amounts {
                capacity: 16_000,
                held: 2_500,
            },
            memory_bytes: Amounts {
                capacity: 64 << 30,
                held: 4 << 30,
            },
            gpu_count: Amounts {
                capacity: 2,
                held: 1,
            },
            gpus: vec![
                (0, Some("tfjob/default/holder worker-0".to_owned())),
                (1, None),
            ],
            queue: vec![Waiting {
                job: "pytorchjob/team-a/big".to_owned(),
                waiting_for: "waiting for 2 GPUs, 1 free".to_owned(),
            }],
            quotas: vec![QuotaLine {
                namespace: "team-a".to_owned(),
                quota: "gpus".to_owned(),
                resource: "requests.nvidia.com/gpu".to_owned(),
                used: "1".to_owned(),
                hard: "2".to_owned(),
                left: "1".to_owned(),
            }],
        };
        assert_eq!(
            node.render(),
            "\
Resources:
  RESOURCE   CAPACITY   HELD   FREE
  cpu        16         2.5    13.5
  memory     64Gi       4Gi    60Gi
  gpu        2          1      1
GPUs:
  GPU   HELD BY
  0     tfjob/default/holder worker-0
  1     <free>
Queue:
  #   JOB                     WAITING FOR
  1   pytorchjob/team-a/big   waiting for 2 GPUs, 1 free
Quotas:
  NAMESPACE   QUOTA   RESOURCE                  USED   HARD   LEFT
  team-a      gpus    requests.nvidia.com/gpu   1      2      1
"
        );
    }

    #[test]
    fn a_node_without_gpus_nor_queue_and_memory_unknown() {
        let node = NodeView {
            cpu_millis: Amounts {
                capacity: 2_000,
                held: 0,
            },
            memory_bytes: Amounts {
                capacity: u64::MAX,
                held: 0,
            },
            gpu_count: Amounts {
                capacity: 0,
                held: 0,
            },
            gpus: Vec::new(),
            queue: Vec::new(),
            quotas: Vec::new(),
        };
        assert_eq!(
            node.render(),
            "\
Resources:
  RESOURCE   CAPACITY   HELD   FREE
  cpu        2          0      2
  memory     unknown    0      unknown
  gpu        0          0      0
GPUs:  <none>
Queue:  <none>
"
        );
    }

    #[test]
    fn usage_rows_in_cores_and_binary_units() {
        let rows = [UsageRow {
            namespace: "default".to_owned(),
            name: "tfjob/mnist".to_owned(),
            cores: 1.234,
            memory_bytes: 300 << 20,
            gpus: vec![0, 1],
        }];
        assert_eq!(
            usage_table(&rows, false).render(),
            "NAME          CPU(cores)   MEMORY(bytes)   GPUS\ntfjob/mnist   1.23         300Mi           0,1\n"
        );
        assert!(
            usage_table(&rows, true)
                .render()
                .starts_with("NAMESPACE   NAME")
        );
    }
}
