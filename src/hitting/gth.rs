//! Exact expected hitting times `E[T_{0,x}]` from the top state to every location, by GTH state
//! reduction (Grassmann, Taksar & Heyman 1985) of the chain with state 0 taboo, in time and
//! memory proportional to the reduction's fill rather than to `states³`.
//!
//! With `A = I − P` restricted to the states other than 0 (a non-singular M-matrix) and
//! `G = A⁻¹` (`G_xy`: expected visits to y before reaching 0, from x):
//! - `m_x0 = (G·1)_x`, the expected time from x back to 0;
//! - `π_x / π_0 = (p_0ᵀ G)_x` (p_0: state 0's row), the visits to x between two visits to 0,
//!   and `1/π_0 = 1 + p_0ᵀ m_·0`, the mean return time to 0;
//! - a commute between x and 0 visits x `G_xx` times, so `m_0x + m_x0 = G_xx / π_x`.
//!
//! Every quantity comes from one elimination: each reduction step adds products and quotients
//! of non-negative rates, and a state's diagonal is the sum of its outgoing rates (to other
//! states and to 0), never `1 − p_xx`. `G_xx` comes from the factors by Takahashi's
//! recurrence over the fill pattern (all terms non-negative). The visits `π_x/π_0` span
//! hundreds of orders of magnitude on deep ranked lists, so they are carried as logarithms.
//! The one subtraction left, `G_xx/π_x − m_x0`, loses at most a factor `1 + m_x0/m_0x` of
//! relative precision: `m_x0` is a walk back to the top (a few steps per score group), small
//! next to the time to get down to x, which is what made dense LU fail.
//!
//! Elimination order follows the chain's shape: entry states first (each links one group to
//! its lines), then lines (a function's jump clique reduces to links among the groups its
//! lines hang from), then the score groups; by minimum degree within each class. Plain
//! minimum degree would take the groups first (they have few neighbours) and merge every
//! function tied at a score into one clique.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// Multiply-rotate hashing of state numbers: the reduction does a map operation per fill
/// entry, where SipHash's resistance to chosen keys buys nothing.
#[derive(Default)]
struct StateHasher(u64);

impl Hasher for StateHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(26) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type Map<V> = HashMap<u32, V, BuildHasherDefault<StateHasher>>;

/// One eliminated state and its neighbours still present when it went.
struct Pivot {
    state: u32,
    /// Total rate out of the state (to its neighbours and to 0) at elimination.
    total: f64,
    /// (neighbour m, rate state → m, rate m → state).
    nbrs: Vec<(u32, f64, f64)>,
}

/// `ln E[T_{0,x}]` for the states `first..first + count` (the locations), from transition
/// rows that sum to 1; states below `groups` are the score groups, those between them and
/// `first` the entries.
pub fn log_hitting_times(rows: &[Vec<(usize, f64)>], groups: usize, first: usize, count: usize) -> Vec<f64> {
    let n = rows.len();
    if count == 0 {
        return Vec::new();
    }
    let class = |s: usize| match s {
        s if s < groups => 2u8,
        s if s < first => 0,
        _ => 1,
    };
    let pivots = reduce(rows, class);
    let g_diag = inverse_diagonal(n, &pivots);
    let back = times_to_top(n, &pivots);
    let visits = log_visits(rows, n, &pivots);
    // Mean return time to 0: one step, plus the way back from wherever the first step went.
    let ln_return = rows[0]
        .iter()
        .filter(|&&(t, _)| t != 0)
        .fold(1.0, |acc, &(t, p)| acc + p * back[t])
        .ln();
    (first..first + count)
        .map(|x| {
            // ln(G_xx / π_x) = ln(m_0x + m_x0).
            let commute = g_diag[x].ln() - (visits[x] - ln_return);
            if !commute.is_finite() {
                return f64::INFINITY;
            }
            commute + (-(back[x] * (-commute).exp())).ln_1p()
        })
        .collect()
}

/// GTH reduction of every state but 0, by `class` (lowest first), then minimum degree.
fn reduce(rows: &[Vec<(usize, f64)>], class: impl Fn(usize) -> u8) -> Vec<Pivot> {
    let n = rows.len();
    // links[i][j] = (rate i → j, rate j → i): a symmetric pattern with both directions' values.
    let mut links: Vec<Map<(f64, f64)>> = (0..n).map(|_| Map::default()).collect();
    // Rate from each state into 0, the taboo state.
    let mut exit = vec![0.0; n];
    for (s, row) in rows.iter().enumerate().skip(1) {
        for &(t, p) in row {
            if t == 0 {
                exit[s] += p;
            } else if t != s {
                links[s].entry(t as u32).or_insert((0.0, 0.0)).0 += p;
                links[t].entry(s as u32).or_insert((0.0, 0.0)).1 += p;
            }
        }
    }
    let mut heap: BinaryHeap<Reverse<(u8, usize, u32)>> =
        (1..n).map(|s| Reverse((class(s), links[s].len(), s as u32))).collect();
    let mut gone = vec![false; n];
    gone[0] = true;
    let mut pivots = Vec::with_capacity(n.saturating_sub(1));
    while let Some(Reverse((_, degree, k))) = heap.pop() {
        let ku = k as usize;
        if gone[ku] || degree != links[ku].len() {
            continue;
        }
        gone[ku] = true;
        let mut nbrs: Vec<(u32, f64, f64)> = links[ku].drain().map(|(m, (o, i))| (m, o, i)).collect();
        nbrs.sort_unstable_by_key(|x| x.0);
        let total = exit[ku] + nbrs.iter().map(|x| x.1).sum::<f64>();
        for &(i, _, _) in &nbrs {
            links[i as usize].remove(&k);
        }
        // Paths i → k → j become rates i → j; the pattern gets every pair, so the neighbours
        // form a clique (what the inverse's recurrence needs), even where a rate is zero. Row
        // i's entry for j holds both directions, so one map operation serves i → j and j → i.
        for &(i, out_i, into_i) in &nbrs {
            exit[i as usize] += into_i / total * exit[ku];
            let link = &mut links[i as usize];
            for &(j, out_j, into_j) in &nbrs {
                if i != j {
                    let e = link.entry(j).or_insert((0.0, 0.0));
                    e.0 += into_i * out_j / total;
                    e.1 += into_j * out_i / total;
                }
            }
        }
        for &(i, _, _) in &nbrs {
            heap.push(Reverse((class(i as usize), links[i as usize].len(), i)));
        }
        pivots.push(Pivot { state: k, total, nbrs });
    }
    pivots
}

/// `G_xx` for every state (0 for state 0) by Takahashi's recurrence, last pivot first:
/// `G_kj = Σ_m (w_km/S_k) G_mj`, `G_jk = Σ_m G_jm (w_mk/S_k)`, `G_kk = 1/S_k + Σ_m (w_km/S_k) G_mk`
/// over the pivot's neighbours m, whose entries among themselves are already known.
fn inverse_diagonal(n: usize, pivots: &[Pivot]) -> Vec<f64> {
    let mut diag = vec![0.0; n];
    let mut off: Vec<Map<f64>> = (0..n).map(|_| Map::default()).collect();
    // G among the pivot's neighbours, gathered once: local[a·r + b] = G_ab.
    let mut local = Vec::new();
    let mut row = Vec::new();
    let mut col = Vec::new();
    for p in pivots.iter().rev() {
        let r = p.nbrs.len();
        local.clear();
        for &(a, _, _) in &p.nbrs {
            let known = &off[a as usize];
            local.extend(p.nbrs.iter().map(|&(b, _, _)| {
                if a == b {
                    diag[a as usize]
                } else {
                    known.get(&b).copied().unwrap_or(0.0)
                }
            }));
        }
        row.clear();
        row.resize(r, 0.0);
        col.clear();
        col.resize(r, 0.0);
        for (m, &(_, out, into)) in p.nbrs.iter().enumerate() {
            let g_m = &local[m * r..(m + 1) * r];
            for x in 0..r {
                // G_kj gathers G_mj over m; G_jk gathers G_jm.
                row[x] += out * g_m[x];
                col[x] += local[x * r + m] * into;
            }
        }
        let mut d = 1.0;
        for (x, &(j, out, _)) in p.nbrs.iter().enumerate() {
            let (to_j, from_j) = (row[x] / p.total, col[x] / p.total);
            d += out * from_j;
            off[p.state as usize].insert(j, to_j);
            off[j as usize].insert(p.state, from_j);
        }
        diag[p.state as usize] = d / p.total;
    }
    diag
}

/// `m_x0 = (G·1)_x`: forward through the lower factor, then back through the upper one.
fn times_to_top(n: usize, pivots: &[Pivot]) -> Vec<f64> {
    let mut y = vec![1.0; n];
    for p in pivots {
        let yk = y[p.state as usize];
        for &(i, _, into) in &p.nbrs {
            y[i as usize] += into / p.total * yk;
        }
    }
    let mut m = vec![0.0; n];
    for p in pivots.iter().rev() {
        let ahead: f64 = p.nbrs.iter().map(|&(j, out, _)| out * m[j as usize]).sum();
        m[p.state as usize] = (y[p.state as usize] + ahead) / p.total;
    }
    m
}

/// `ln(π_x / π_0) = ln (p_0ᵀ G)_x`, the same two sweeps transposed, summed in log space
/// (the visits to a deep location fall far below the smallest double).
fn log_visits(rows: &[Vec<(usize, f64)>], n: usize, pivots: &[Pivot]) -> Vec<f64> {
    let mut a = vec![f64::NEG_INFINITY; n];
    for &(t, p) in &rows[0] {
        if t != 0 {
            a[t] = log_add(a[t], p.ln());
        }
    }
    for p in pivots {
        let ak = a[p.state as usize];
        for &(j, out, _) in &p.nbrs {
            a[j as usize] = log_add(a[j as usize], ak + (out / p.total).ln());
        }
    }
    let mut r = vec![f64::NEG_INFINITY; n];
    for p in pivots.iter().rev() {
        let mut v = a[p.state as usize] - p.total.ln();
        for &(i, _, into) in &p.nbrs {
            v = log_add(v, r[i as usize] + (into / p.total).ln());
        }
        r[p.state as usize] = v;
    }
    r
}

/// `ln(e^a + e^b)` without overflow.
pub(super) fn log_add(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    if lo == f64::NEG_INFINITY {
        return hi;
    }
    hi + (lo - hi).exp().ln_1p()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_add_keeps_tiny_terms_in_range() {
        assert!((log_add(0.0, 0.0) - 2f64.ln()).abs() < 1e-15);
        assert_eq!(log_add(f64::NEG_INFINITY, -5.0), -5.0);
        // e^-2000 + e^-2000: both far below the smallest double.
        assert!((log_add(-2000.0, -2000.0) - (-2000.0 + 2f64.ln())).abs() < 1e-12);
    }
}
