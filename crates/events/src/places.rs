//! [`Places`]: the places where one job's event files are looked for, in order, each read
//! incrementally, so that a page or a watch that asks again reads only what was appended.

use std::path::PathBuf;

use crate::{Progress, Runs};

/// Several roots of runs, in order of preference, kept between refreshes.
#[derive(Debug, Default)]
pub struct Places {
    roots: Vec<Runs>,
}

impl Places {
    /// Reads what was appended under each of `roots` since the last refresh; a root not seen
    /// before is read from its start, one no longer named is dropped. The order of `roots` is
    /// kept.
    pub fn refresh(&mut self, roots: Vec<PathBuf>) {
        let mut kept = std::mem::take(&mut self.roots);
        for root in roots {
            match kept.iter().position(|runs| runs.root() == root) {
                Some(at) => {
                    let mut runs = kept.swap_remove(at);
                    runs.refresh();
                    self.roots.push(runs);
                }
                None => self.roots.push(Runs::scan(root)),
            }
        }
    }

    /// Every root, in order.
    pub fn roots(&self) -> impl Iterator<Item = &Runs> {
        self.roots.iter()
    }

    /// The first root that has a scalar.
    #[must_use]
    pub fn first_with_series(&self) -> Option<&Runs> {
        self.roots
            .iter()
            .find(|runs| runs.series().next().is_some())
    }

    /// The progress of the first root that has a scalar ([`Runs::latest`]).
    #[must_use]
    pub fn latest(&self) -> Option<Progress> {
        self.first_with_series().and_then(Runs::latest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventWriter;

    #[test]
    fn the_first_place_with_a_scalar_wins_and_appended_points_are_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (empty, second, third) = (
            dir.path().join("empty"),
            dir.path().join("second"),
            dir.path().join("third"),
        );
        let mut late = EventWriter::create(&second.join("train")).expect("create");
        let mut other = EventWriter::create(&third).expect("create");
        other.scalar("loss", 9, 1e9, 0.5).expect("write");
        other.flush().expect("flush");
        let roots = vec![empty.clone(), second.clone(), third.clone()];
        let mut places = Places::default();
        places.refresh(roots.clone());
        assert_eq!(
            places.first_with_series().map(Runs::root),
            Some(third.as_path())
        );

        late.scalar("loss", 3, 1e9, 0.25).expect("write");
        late.flush().expect("flush");
        places.refresh(roots);
        let latest = places.latest().expect("a progress");
        assert_eq!((latest.step, latest.value), (3, 0.25));
        let listed: Vec<_> = places.roots().map(Runs::root).collect();
        assert_eq!(listed, [empty.as_path(), second.as_path(), third.as_path()]);

        places.refresh(vec![third.clone()]);
        assert_eq!(places.roots().count(), 1);
    }
}
