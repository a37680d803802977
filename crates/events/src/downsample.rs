//! Fewer points for a chart: largest-triangle-three-buckets.

use crate::Point;

/// At most `max` of `points` for plotting, chosen by largest-triangle-three-buckets (Steinarsson,
/// 2013) over (step, value): the first and last points, and one point of each of `max - 2` equal
/// buckets in between, the one forming the largest triangle with the point kept before it and the
/// average of the next bucket. Unlike every n-th point, it keeps spikes. A bucket holding a NaN or
/// infinite value keeps the first such point, so a diverging run shows.
///
/// `points` are returned as they are when there are no more than `max`; with `max` below 3 the
/// last point (`max` 1) or the first and last (`max` 2) are kept. Points keep their order.
#[must_use]
pub fn downsample(points: &[Point], max: usize) -> Vec<Point> {
    let (Some(&first), Some(&last)) = (points.first(), points.last()) else {
        return Vec::new();
    };
    match max {
        _ if points.len() <= max => return points.to_vec(),
        0 => return Vec::new(),
        1 => return vec![last],
        2 => return vec![first, last],
        _ => {}
    }
    let inner = &points[1..points.len() - 1];
    let buckets = max - 2;
    // Bucket i is inner[bounds(i)..bounds(i + 1)]; each holds at least one point since
    // inner.len() >= buckets.
    let bounds = |bucket: usize| bucket * inner.len() / buckets;
    let mut kept = Vec::with_capacity(max);
    kept.push(first);
    let mut previous = first;
    for bucket in 0..buckets {
        let candidates = &inner[bounds(bucket)..bounds(bucket + 1)];
        let next = if bucket + 1 == buckets {
            std::slice::from_ref(&last)
        } else {
            &inner[bounds(bucket + 1)..bounds(bucket + 2)]
        };
        let chosen = largest_triangle(previous, candidates, average(next, previous));
        kept.push(chosen);
        previous = chosen;
    }
    kept.push(last);
    kept
}

/// The point of `candidates` (not empty) that forms the largest triangle with `previous` and
/// `next`, or the first whose value is not finite.
fn largest_triangle(previous: Point, candidates: &[Point], next: (f64, f64)) -> Point {
    let (previous_x, previous_y) = (x(&previous), previous.value);
    let (next_x, next_y) = next;
    let mut chosen = candidates[0];
    let mut largest = f64::NEG_INFINITY;
    for candidate in candidates {
        if !candidate.value.is_finite() {
            return *candidate;
        }
        // Twice the area; the factor does not change which is largest.
        let area = ((previous_x - next_x) * (candidate.value - previous_y)
            - (previous_x - x(candidate)) * (next_y - previous_y))
            .abs();
        if area > largest {
            largest = area;
            chosen = *candidate;
        }
    }
    chosen
}

/// The average (step, value) of the finite points of `bucket`; `fallback`'s value when none is.
#[expect(
    clippy::cast_precision_loss,
    reason = "a bucket holds far fewer than 2^52 points"
)]
fn average(bucket: &[Point], fallback: Point) -> (f64, f64) {
    let finite: Vec<&Point> = bucket
        .iter()
        .filter(|point| point.value.is_finite())
        .collect();
    if finite.is_empty() {
        return (x(&bucket[0]), fallback.value);
    }
    let count = finite.len() as f64;
    let step = finite.iter().map(|point| x(point)).sum::<f64>() / count;
    let value = finite.iter().map(|point| point.value).sum::<f64>() / count;
    (step, value)
}

/// A point's position along the horizontal axis.
#[expect(
    clippy::cast_precision_loss,
    reason = "steps beyond 2^53 are not plotted exactly anyway"
)]
fn x(point: &Point) -> f64 {
    point.step as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(step: i64, value: f64) -> Point {
        Point {
            step,
            wall_time: 1e9 + small(step),
            value,
        }
    }

    /// A test's step as a float.
    fn small(step: i64) -> f64 {
        f64::from(i32::try_from(step).expect("a small step"))
    }

    fn series(len: i64, value: impl Fn(i64) -> f64) -> Vec<Point> {
        (0..len).map(|step| point(step, value(step))).collect()
    }

    #[test]
    fn keeps_first_and_last_and_an_even_spread() {
        let points = series(100_000, |step| 1.0 / (small(step) + 1.0));
        let kept = downsample(&points, 2_000);
        assert_eq!(kept.len(), 2_000);
        assert_eq!(kept[0], points[0]);
        assert_eq!(kept[1_999], points[99_999]);
        // One point per bucket of 99,998 / 1,998 ≈ 50 steps: never two from one bucket, nor a
        // gap of more than two buckets.
        for pair in kept.windows(2) {
            let gap = pair[1].step - pair[0].step;
            assert!((1..=101).contains(&gap), "gap {gap} between {pair:?}");
        }
    }

    #[test]
    fn keeps_a_spike_that_every_nth_point_would_miss() {
        let points = series(10_000, |step| if step == 4_321 { 50.0 } else { 1.0 });
        let kept = downsample(&points, 100);
        assert!(kept.iter().any(|point| point.step == 4_321), "{kept:?}");
    }

    #[test]
    fn keeps_a_diverging_point() {
        let points = series(10_000, |step| if step == 777 { f64::NAN } else { 1.0 });
        let kept = downsample(&points, 100);
        assert!(kept.iter().any(|point| point.value.is_nan()));
        let infinite = series(1_000, |step| if step > 500 { f64::INFINITY } else { 0.5 });
        assert_eq!(downsample(&infinite, 10).len(), 10);
    }

    #[test]
    fn short_series_and_small_maxima() {
        let points = series(5, small);
        assert_eq!(downsample(&points, 5), points);
        assert_eq!(downsample(&points, 100), points);
        let peaked = series(5, |step| if step == 2 { 5.0 } else { 0.0 });
        assert_eq!(
            downsample(&peaked, 3),
            vec![peaked[0], peaked[2], peaked[4]]
        );
        assert_eq!(downsample(&points, 2), vec![points[0], points[4]]);
        assert_eq!(downsample(&points, 1), vec![points[4]]);
        assert_eq!(downsample(&points, 0), vec![]);
        assert_eq!(downsample(&[], 10), vec![]);
    }
}
