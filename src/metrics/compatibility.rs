//! Backward compatibility: the empirical criterion and the update gain (Shen et al. 2020).
//!
//! For one metric M: the criterion holds when M(new, old) > M(old, old) (new queries against
//! the old gallery beat the old model on its own). The update gain
//! G = [M(new, old) - M(old, old)] / [M(new*, new*) - M(old, old)] is the share of the full
//! backfilling improvement obtained without backfilling. It is only meaningful when the
//! criterion holds and the paragon new* improves on the old model; otherwise it is not
//! applicable (`None`), never a number.

/// The criterion and the update gain for one metric.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub(crate) struct UpdateGain {
    /// M(new, old) - M(old, old).
    pub difference: f64,
    /// Whether M(new, old) > M(old, old).
    pub criterion: bool,
    /// G, when the criterion holds and M(new*, new*) > M(old, old).
    pub gain: Option<f64>,
    /// Why G is not applicable, when it is not.
    pub not_applicable: Option<&'static str>,
}

/// The criterion and G from M(new, old), M(old, old) and M(new*, new*).
pub(crate) fn update_gain(new_old: f64, old_old: f64, new_new: f64) -> UpdateGain {
    let difference = new_old - old_old;
    let criterion = difference > 0.0;
    let headroom = new_new - old_old;
    let (gain, not_applicable) = if !criterion {
        (None, Some("criterion fails: M(new, old) <= M(old, old)"))
    } else if headroom <= 0.0 {
        (
            None,
            Some("the paragon does not improve on the old model: M(new*, new*) <= M(old, old)"),
        )
    } else {
        (Some(difference / headroom), None)
    };
    UpdateGain {
        difference,
        criterion,
        gain,
        not_applicable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_worked_gain() {
        // Paper-like numbers: old/old .40, new/old .46, new*/new* .60: G = .06 / .20 = .3.
        let g = update_gain(0.46, 0.40, 0.60);
        assert!(g.criterion);
        assert!((g.gain.unwrap() - 0.3).abs() < 1e-12);
        assert!((g.difference - 0.06).abs() < 1e-12);
    }

    #[test]
    fn a_failed_criterion_gives_no_number() {
        let g = update_gain(0.38, 0.40, 0.60);
        assert!(!g.criterion);
        assert_eq!(g.gain, None);
        assert!(g.not_applicable.unwrap().contains("criterion fails"));
        let tie = update_gain(0.40, 0.40, 0.60);
        assert!(!tie.criterion, "equal is not better");
    }

    #[test]
    fn no_headroom_gives_no_number() {
        let g = update_gain(0.45, 0.40, 0.39);
        assert!(g.criterion);
        assert_eq!(g.gain, None);
    }
}
