//! The runs of a log directory: discovery of event files, incremental reading, the series read.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use prost::Message;

use crate::problem::{Defect, Problem, ProblemKind};
use crate::proto::{Event, What};
use crate::record::{Cursor, Stop};
use crate::scalar::{Point, plugin_of, scalar_of};

/// The prefix of an event file's name (`events.out.tfevents.<time>.<host>...`).
const EVENT_FILE_PREFIX: &str = "events.out.tfevents.";

/// The scalar series under a log directory, by run and tag, kept up to date by
/// [`refresh`](Runs::refresh).
///
/// Every directory under the root that holds event files is a run, named by its path relative to
/// the root with `/` separators (`""` for the root itself; Keras writes `train` and
/// `validation`). A run's files are read in name order; their points are kept in the order read.
#[derive(Debug)]
pub struct Runs {
    root: PathBuf,
    by_name: BTreeMap<String, Run>,
    /// Directories that could not be listed at the last refresh.
    scan_problems: Vec<Problem>,
}

/// One series: the points of one tag in one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Series<'a> {
    /// The run's name: its directory relative to the root.
    pub run: &'a str,
    /// The tag, such as `loss` or `epoch_accuracy`.
    pub tag: &'a str,
    /// The points, in the order they were read.
    pub points: &'a [Point],
}

/// One run: its event files and what was read from them.
#[derive(Debug, Default)]
struct Run {
    /// By file name.
    files: BTreeMap<OsString, EventFile>,
    scalars: Scalars,
}

/// How far one event file has been read, and why it stopped if it did.
#[derive(Debug, Default)]
struct EventFile {
    cursor: Cursor,
    problem: Option<Problem>,
}

/// The scalar series of one run, and the plugin of each tag seen so far.
#[derive(Debug, Default)]
struct Scalars {
    series: BTreeMap<String, Vec<Point>>,
    /// The plugin a tag's metadata named: writers may give it only with a tag's first value.
    plugins: HashMap<String, String>,
}

impl Runs {
    /// Finds and reads the event files under `root`. A root that does not exist (yet) has no
    /// runs and no problems.
    pub fn scan(root: impl Into<PathBuf>) -> Runs {
        let mut runs = Runs {
            root: root.into(),
            by_name: BTreeMap::new(),
            scan_problems: Vec::new(),
        };
        runs.refresh();
        runs
    }

    /// Looks for new runs and files, and reads the records appended to every file since the last
    /// read, each run's files in name order. A file stopped by a corrupt record is not read
    /// again; one that could not be read is tried again; one that is gone keeps its points.
    pub fn refresh(&mut self) {
        self.scan_problems.clear();
        let mut directories = Vec::new();
        find_event_files(
            &self.root,
            Path::new(""),
            &mut directories,
            &mut self.scan_problems,
        );
        for (directory, names) in directories {
            let run = self.by_name.entry(run_name(&directory)).or_default();
            for name in names {
                let relative = directory.join(&name);
                let file = run.files.entry(name).or_default();
                file.read(&self.root.join(&relative), relative, &mut run.scalars);
            }
        }
    }

    /// The directory the runs are under.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every series, by run name then tag.
    pub fn series(&self) -> impl Iterator<Item = Series<'_>> {
        self.by_name.iter().flat_map(|(run, contents)| {
            contents
                .scalars
                .series
                .iter()
                .map(move |(tag, points)| Series { run, tag, points })
        })
    }

    /// The points of one series, if it exists.
    #[must_use]
    pub fn points(&self, run: &str, tag: &str) -> Option<&[Point]> {
        Some(self.by_name.get(run)?.scalars.series.get(tag)?)
    }

    /// What kept event files from being read: directories that could not be listed at the last
    /// refresh, then each file's problem, by run and file name.
    pub fn problems(&self) -> impl Iterator<Item = &Problem> {
        let files = self
            .by_name
            .values()
            .flat_map(|run| run.files.values().filter_map(|file| file.problem.as_ref()));
        self.scan_problems.iter().chain(files)
    }
}

impl EventFile {
    /// Reads the records appended to the file at `path` (shown as `relative`) into `scalars`,
    /// unless a lasting problem stopped it.
    fn read(&mut self, path: &Path, relative: PathBuf, scalars: &mut Scalars) {
        if self
            .problem
            .as_ref()
            .is_some_and(|problem| !problem.is_transient())
        {
            return;
        }
        let outcome = self.cursor.read_appended(path, |data| {
            let event =
                Event::decode(data).map_err(|error| Defect::NotAnEvent(error.to_string()))?;
            scalars.add(&event);
            Ok(())
        });
        let kind = match outcome {
            Ok(None) => None,
            Ok(Some(Stop::Corrupt(defect))) => Some(ProblemKind::Corrupt {
                offset: self.cursor.offset,
                records_read: self.cursor.records,
                defect,
            }),
            Ok(Some(Stop::Shrank(size))) => Some(ProblemKind::Shrank {
                size,
                read: self.cursor.offset,
            }),
            Err(error) => Some(ProblemKind::Unreadable {
                error: error.to_string(),
            }),
        };
        self.problem = kind.map(|kind| Problem {
            path: relative,
            kind,
        });
    }
}

impl Scalars {
    /// Adds a point for every scalar value of `event`'s summary.
    fn add(&mut self, event: &Event) {
        let Some(What::Summary(summary)) = &event.what else {
            return;
        };
        for value in &summary.value {
            if let Some(plugin) = plugin_of(value)
                && self.plugins.get(&value.tag).map(String::as_str) != Some(plugin)
            {
                self.plugins.insert(value.tag.clone(), plugin.to_owned());
            }
            let plugin = self.plugins.get(&value.tag).map(String::as_str);
            let Some(scalar) = scalar_of(value, plugin) else {
                continue;
            };
            let point = Point {
                step: event.step,
                wall_time: event.wall_time,
                value: scalar,
            };
            match self.series.get_mut(&value.tag) {
                Some(points) => points.push(point),
                None => {
                    self.series.insert(value.tag.clone(), vec![point]);
                }
            }
        }
    }
}

/// Adds to `found` every directory under `directory` (at `relative` from the root) that holds
/// event files, with their names in order; directories that cannot be listed go to `problems`.
/// Symbolic links to directories are not followed, so the walk ends.
fn find_event_files(
    directory: &Path,
    relative: &Path,
    found: &mut Vec<(PathBuf, Vec<OsString>)>,
    problems: &mut Vec<Problem>,
) {
    let mut names = Vec::new();
    let mut subdirectories = Vec::new();
    let listing = fs::read_dir(directory).and_then(|entries| {
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            if entry.file_type()?.is_dir() {
                subdirectories.push(name);
            } else if name.to_string_lossy().starts_with(EVENT_FILE_PREFIX)
                && entry.path().is_file()
            {
                names.push(name);
            }
        }
        Ok(())
    });
    match listing {
        Ok(()) => {}
        // Not created yet, or removed since its parent was listed.
        Err(error) if error.kind() == io::ErrorKind::NotFound => return,
        Err(error) => problems.push(Problem {
            path: relative.to_owned(),
            kind: ProblemKind::Unreadable {
                error: error.to_string(),
            },
        }),
    }
    if !names.is_empty() {
        names.sort();
        found.push((relative.to_owned(), names));
    }
    subdirectories.sort();
    for name in subdirectories {
        find_event_files(
            &directory.join(&name),
            &relative.join(&name),
            found,
            problems,
        );
    }
}

/// A run's name: its directory relative to the root, with `/` between components.
fn run_name(relative: &Path) -> String {
    relative
        .components()
        .map(|component| component.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests;
