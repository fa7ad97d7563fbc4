//! Student's t distribution: the quantile behind a report's confidence intervals.
//!
//! A "mean ± std over 3 seeds" says nothing about how far the mean may be from the truth; the
//! t-interval `mean ± t(1 - a/2; n - 1) · s / √n` does, and with three draws its factor is
//! 4.30 at 95%, not the 1.96 of a normal. No crate is needed for one quantile: the t
//! distribution's tail is a regularised incomplete beta function, evaluated here by its
//! continued fraction (Lentz's method, as in Numerical Recipes §6.4) with a Lanczos
//! log-gamma, and the quantile is found by bisection on the tail, which is monotone, to the
//! last bit of a double. The tests hold it against SciPy's values.

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine terms: about 15 significant digits).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=1000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((qam + m2) * (a + m2));
        for coefficient in [even, -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))] {
            d = 1.0 + coefficient * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + coefficient / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// The regularised incomplete beta function I_x(a, b), for a, b > 0 and x in [0, 1].
pub(crate) fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The fraction converges fast for x below the mean (a + 1) / (a + b + 2); above it, use
    // the symmetry I_x(a, b) = 1 - I_{1-x}(b, a).
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// P(T > t) for t >= 0, T Student-t with `df` degrees of freedom.
fn upper_tail(t: f64, df: f64) -> f64 {
    0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// The quantile of Student's t with `df` > 0 degrees of freedom at probability `p` in (0, 1):
/// the t with P(T <= t) = p.
pub(crate) fn quantile(p: f64, df: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0 && df > 0.0, "quantile({p}, {df})");
    if p < 0.5 {
        return -quantile(1.0 - p, df);
    }
    let tail = 1.0 - p;
    if tail == 0.5 {
        return 0.0;
    }
    let mut hi = 1.0;
    while upper_tail(hi, df) > tail {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    // The tail falls as t grows: halve [lo, hi] until it is one ulp wide.
    for _ in 0..2000 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if upper_tail(mid, df) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The mean of `values` and its two-sided Student-t confidence interval at `level` (0.95):
/// `mean ± t((1 + level) / 2; n - 1) · s / √n` with s the sample standard deviation.
/// `None` with fewer than two values (no spread to estimate).
pub fn interval(values: &[f64], level: f64) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let ss: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
    let s = (ss / (n - 1) as f64).sqrt();
    let half = quantile(0.5 + level / 2.0, (n - 1) as f64) * s / (n as f64).sqrt();
    Some((mean - half, mean + half))
}

#[cfg(test)]
mod tests {
    use super::*;

    // (p, df, t.ppf(p, df)) from SciPy 1.17.1, printed by:
    //   python3 -c "from scipy import stats
    //   for p, df in [(0.975, 1), (0.975, 2), (0.975, 4), (0.995, 9), (0.9, 29), (0.975, 100),
    //                 (0.999, 3), (0.6, 5)]:
    //       print(f'({p}, {df}.0, {stats.t.ppf(p, df)!r}),')"
    const SCIPY_PPF: &[(f64, f64, f64)] = &[
        (0.975, 1.0, 12.706204736174694),
        (0.975, 2.0, 4.302652729749462),
        (0.975, 4.0, 2.7764451051977934),
        (0.995, 9.0, 3.249835541592126),
        (0.9, 29.0, 1.311433647301551),
        (0.975, 100.0, 1.9839715185235518),
        (0.999, 3.0, 10.214531852407383),
        (0.6, 5.0, 0.2671808657041451),
    ];

    // scipy.stats.t.interval(0.95, n - 1, loc=mean, scale=sem) on the values, printed by:
    //   python3 -c "import numpy as np; from scipy import stats
    //   for v in [[0.40, 0.42, 0.47], [0.066, -0.012, 0.013]]:
    //       a = np.array(v); print(stats.t.interval(0.95, len(a) - 1, loc=a.mean(), scale=stats.sem(a)))"
    const SCIPY_INTERVALS: &[(&[f64], f64, f64)] = &[
        (&[0.40, 0.42, 0.47], 0.34043314104970407, 0.519566858950296),
        (
            &[0.066, -0.012, 0.013],
            -0.07660689150554645,
            0.12127355817221311,
        ),
    ];

    #[test]
    fn intervals_match_scipy() {
        for &(values, lo, hi) in SCIPY_INTERVALS {
            let (l, h) = interval(values, 0.95).unwrap();
            assert!(
                (l - lo).abs() < 1e-12 && (h - hi).abs() < 1e-12,
                "{values:?}: [{l}, {h}]"
            );
        }
    }

    #[test]
    fn quantiles_match_scipy() {
        for &(p, df, expected) in SCIPY_PPF {
            let got = quantile(p, df);
            assert!(
                (got - expected).abs() <= 1e-10 * expected.abs().max(1.0),
                "t.ppf({p}, {df}): {got} vs {expected}"
            );
            assert!((quantile(1.0 - p, df) + expected).abs() <= 1e-10 * expected.abs().max(1.0));
        }
    }

    #[test]
    fn incomplete_beta_has_its_closed_forms() {
        // I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1 - x)^b.
        for x in [0.01, 0.3, 0.5, 0.77, 0.999] {
            assert!((incomplete_beta(1.0, 1.0, x) - x).abs() < 1e-14);
            assert!((incomplete_beta(3.0, 1.0, x) - x.powi(3)).abs() < 1e-14);
            assert!((incomplete_beta(1.0, 4.0, x) - (1.0 - (1.0 - x).powi(4))).abs() < 1e-14);
        }
    }

    #[test]
    fn an_interval_needs_two_values() {
        assert_eq!(interval(&[0.5], 0.95), None);
        assert_eq!(interval(&[], 0.95), None);
    }
}
