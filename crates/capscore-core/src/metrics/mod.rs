//! The caption metrics, one module each. They work on tokenized captions and never know about
//! I/O, HTTP or the engine's scheduling.

pub mod bleu;
pub mod cider;
pub mod meteor;
pub mod rouge;
pub mod spice;

/// Whether two ascending slices share an element (a merge walk).
pub fn sorted_intersect<T: Ord>(a: &[T], b: &[T]) -> bool {
    let (mut x, mut y) = (0, 0);
    while x < a.len() && y < b.len() {
        match a[x].cmp(&b[y]) {
            std::cmp::Ordering::Less => x += 1,
            std::cmp::Ordering::Greater => y += 1,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

/// The mean of `values` as numpy computes `np.mean` for a float64 array: pairwise summation
/// (blocks of 8 accumulators below 128 elements, halving above), then division by the count
/// (spec COCO §7). ROUGE-L and CIDEr-D aggregates use it; a sequential sum differs in the last
/// bits.
pub fn numpy_mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    numpy_pairwise_sum(values) / values.len() as f64
}

fn numpy_pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        let mut s = 0.0;
        for &x in a {
            s += x;
        }
        s
    } else if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let full = n - n % 8;
        let mut i = 8;
        while i < full {
            for j in 0..8 {
                r[j] += a[i + j];
            }
            i += 8;
        }
        let mut s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &x in &a[full..] {
            s += x;
        }
        s
    } else {
        let mut m = n / 2;
        m -= m % 8;
        numpy_pairwise_sum(&a[..m]) + numpy_pairwise_sum(&a[m..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairwise_mean_matches_plain_mean_on_exact_values() {
        let v: Vec<f64> = (0..1000).map(f64::from).collect();
        assert_eq!(numpy_mean(&v), 499.5);
        assert_eq!(numpy_mean(&[1.0, 2.0]), 1.5);
        assert!(numpy_mean(&[]).is_nan());
    }

    #[test]
    fn pairwise_sum_differs_from_sequential_where_numpy_does() {
        // 0.1 added 10 times: numpy gives 1.0 (pairwise), a sequential sum 0.9999999999999999.
        let v = [0.1f64; 10];
        assert_eq!(numpy_pairwise_sum(&v), 1.0);
        assert_ne!(v.iter().sum::<f64>(), 1.0);
    }
}
