//! `get -w`: after the listing, each job again when it changes (new, or its object changed),
//! until interrupted, as `kubectl get -w` does. A job deleted is not printed.

use std::collections::HashMap;
use std::io::Write;

use super::print::{Item, Printer};

/// The jobs printed so far, each as it was last printed.
#[derive(Debug, Default)]
pub struct Seen {
    objects: HashMap<String, serde_json::Value>,
}

impl Seen {
    /// Takes `items` as printed.
    pub fn remember(&mut self, items: &[Item<'_>]) {
        for item in items {
            self.objects.insert(item.key(), item.object.clone());
        }
    }

    /// Prints the items that are new or changed since last printed, and remembers them.
    pub fn print_changed(
        &mut self,
        printer: &Printer,
        items: &[Item<'_>],
        out: &mut impl Write,
    ) -> anyhow::Result<()> {
        let changed: Vec<usize> = items
            .iter()
            .enumerate()
            .filter(|(_, item)| self.objects.get(&item.key()) != Some(&item.object))
            .map(|(i, _)| i)
            .collect();
        printer.print_changed(items, &changed, out)?;
        self.remember(items);
        Ok(())
    }
}
