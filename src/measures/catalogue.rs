//! The catalogue of published spectrum-based measures.
//!
//! Each entry below becomes a function (its doc comment is the formula and the source) and a
//! row of [`SPECTRUM`]. Notation: `ef`/`ep` = failing/passing tests that run the unit, `nf`/`np`
//! = failing/passing tests that do not, `F = ef + nf`, `P = ep + np`, `n = F + P`. In the
//! similarity-coefficient literature `a = ef`, `b = ep`, `c = nf`, `d = np`; association-rule
//! measures read "the unit ran" as A and "the test failed" as B, so `P(AB) = ef/n`,
//! `P(A) = (ef + ep)/n`, `P(B) = F/n`.
//!
//! Groups ER1–ER6 are Xie, Chen, Kuo & Xu's single-fault equivalence classes (TOSEM 2013), as
//! used by Zhang et al.'s cloning study (JSS 2017); the cloning class is the one that study proves.

use super::measure::Cloning::{Improved, NonDeterministic, Preserved};
use super::measure::{Kind, Measure, div, ln};
use crate::spectra::Counts;

/// `(ef·np − nf·ep)`: the determinant of the 2×2 table, numerator of many correlation measures.
fn det(c: Counts) -> f64 {
    c.ef * c.np - c.nf * c.ep
}

/// `(ef+ep)(np+nf)(ef+nf)(ep+np)`: the product of the table's four margins.
fn margins(c: Counts) -> f64 {
    (c.ef + c.ep) * (c.np + c.nf) * (c.ef + c.nf) * (c.ep + c.np)
}

/// Goodman & Kruskal's σ and σ' (Choi et al. 2010): sums of row/column maxima.
fn sigmas(c: Counts) -> (f64, f64) {
    let Counts { ef, ep, nf, np } = c;
    let sigma = ef.max(ep) + nf.max(np) + ef.max(nf) + ep.max(np);
    let sigma2 = (ef + nf).max(ep + np) + (ef + ep).max(nf + np);
    (sigma, sigma2)
}

/// Association-rule probabilities: `(P(AB), P(A), P(B))` with A = "ran the unit", B = "failed".
fn probs(c: Counts) -> (f64, f64, f64) {
    let n = c.n();
    (div(c.ef, n), div(c.ef + c.ep, n), div(c.f(), n))
}

/// Wong3's weight of passing executions.
fn wong3_h(ep: f64) -> f64 {
    if ep <= 2.0 {
        ep
    } else if ep <= 10.0 {
        2.0 + 0.1 * (ep - 2.0)
    } else {
        2.8 + 0.001 * (ep - 10.0)
    }
}

macro_rules! catalogue {
    ($(
        $func:ident $name:literal [$($alias:literal),*] $group:expr, $class:expr,
        $formula:literal, $source:literal,
        |$c:pat_param| $body:expr;
    )*) => {
        $(
            #[doc = concat!("`", $formula, "`\n\n", $source)]
            pub fn $func($c: Counts) -> f64 {
                $body
            }
        )*

        /// Every spectrum-based measure, in catalogue order.
        pub static SPECTRUM: &[Measure] = &[$(
            Measure {
                name: $name,
                aliases: &[$($alias),*],
                formula: $formula,
                citation: $source,
                group: $group,
                cloning: $class,
                kind: Kind::Spectrum($func),
            },
        )*];
    };
}

catalogue! {
    // ---- The cloning study's 33 formulas (Zhang et al.), by Xie et al.'s groups ----------------
    naish1 "naish1" ["op1", "opt"] Some("ER1"), Some(Preserved),
        "-1 if ef < F, else np",
        "Naish, Lee & Ramamohanarao, 'A model for spectra-based software diagnosis', TOSEM 20(3), 2011",
        |c| if c.ef < c.f() { -1.0 } else { c.np };
    naish2 "naish2" ["op2", "naish-i", "naishi"] Some("ER1"), Some(Preserved),
        "ef - ep / (ep + np + 1)",
        "Naish, Lee & Ramamohanarao, TOSEM 2011 (Op2); Landsberg et al., single-fault optimal data (Naish-I)",
        |c| c.ef - c.ep / (c.p() + 1.0);
    jaccard "jaccard" ["tanimoto"] Some("ER2"), Some(Improved),
        "ef / (ef + nf + ep)",
        "Jaccard, Bull. Soc. Vaudoise Sci. Nat. 37, 1901; Abreu, Zoeteweij & van Gemund, PRDC 2006",
        |c| div(c.ef, c.f() + c.ep);
    anderberg "anderberg" ["sokal-sneath1"] Some("ER2"), Some(Improved),
        "ef / (ef + 2 (nf + ep))",
        "Anderberg, 'Cluster Analysis for Applications', 1973",
        |c| div(c.ef, c.ef + 2.0 * (c.nf + c.ep));
    sorensen_dice "sorensen-dice" ["sorensen", "czekanowski", "nei-li"] Some("ER2"), Some(Improved),
        "2 ef / (2 ef + nf + ep)",
        "Sørensen 1948; Duarte et al., 'Comparison of similarity coefficients based on RAPD markers', 1999",
        |c| div(2.0 * c.ef, 2.0 * c.ef + c.nf + c.ep);
    dice "dice" [] Some("ER2"), Some(Improved),
        "2 ef / (ef + nf + ep)",
        "Dice, 'Measures of the amount of ecologic association between species', Ecology 26, 1945",
        |c| div(2.0 * c.ef, c.f() + c.ep);
    goodman "goodman" [] Some("ER2"), Some(Improved),
        "(2 ef - nf - ep) / (2 ef + nf + ep)",
        "Goodman & Kruskal, 'Measures of association for cross classifications', JASA 49, 1954",
        |c| div(2.0 * c.ef - c.nf - c.ep, 2.0 * c.ef + c.nf + c.ep);
    tarantula "tarantula" [] Some("ER3"), Some(Preserved),
        "(ef / F) / (ef / F + ep / P)",
        "Jones, Harrold & Stasko, 'Visualization of test information to assist fault localization', ICSE 2002",
        |c| {
            let (fail, pass) = (div(c.ef, c.f()), div(c.ep, c.p()));
            div(fail, fail + pass)
        };
    qe "qe" ["confidence", "precision"] Some("ER3"), Some(Preserved),
        "ef / (ef + ep)",
        "Lee, Naish & Ramamohanarao, 'Study of the relationship of bug consistency with respect to performance of spectra metrics', ICCSIT 2009",
        |c| div(c.ef, c.ef + c.ep);
    cbi_inc "cbi-inc" ["sbi", "cbi"] Some("ER3"), Some(Preserved),
        "ef / (ef + ep) - F / n",
        "Liblit, Naik, Zheng, Aiken & Jordan, 'Scalable statistical bug isolation', PLDI 2005 (Increase)",
        |c| div(c.ef, c.ef + c.ep) - div(c.f(), c.n());
    cbi_log "cbi-log" [] None, None,
        "2 / (1 / cbi-inc + ln F / ln ef)",
        "Liblit et al., PLDI 2005 (Importance); Naish, Lee & Ramamohanarao, TOSEM 2011",
        |c| div(2.0, div(1.0, cbi_inc(c)) + div(ln(c.f()), ln(c.ef)));
    cbi_sqrt "cbi-sqrt" [] None, None,
        "2 / (1 / cbi-inc + sqrt(F) / sqrt(ef))",
        "Liblit et al., PLDI 2005; Naish, Lee & Ramamohanarao, TOSEM 2011",
        |c| div(2.0, div(1.0, cbi_inc(c)) + div(c.f().sqrt(), c.ef.sqrt()));
    wong2 "wong2" [] Some("ER4"), Some(Improved),
        "ef - ep",
        "Wong, Qi, Zhao & Cai, 'Effective fault localization using code coverage', COMPSAC 2007",
        |c| c.ef - c.ep;
    hamann "hamann" [] Some("ER4"), Some(Improved),
        "(ef + np - nf - ep) / n",
        "Hamann, 'Merkmalsbestand und Verwandtschaftsbeziehungen der Farinosae', Willdenowia 2, 1961",
        |c| div(c.ef + c.np - c.nf - c.ep, c.n());
    simple_matching "simple-matching" ["sokal-michener", "accuracy"] Some("ER4"), Some(Improved),
        "(ef + np) / n",
        "Sokal & Michener, Univ. Kansas Sci. Bull. 38, 1958; da Silva Meyer et al., Genet. Mol. Biol. 27, 2004",
        |c| div(c.ef + c.np, c.n());
    sokal "sokal" ["sokal-sneath2"] Some("ER4"), Some(Improved),
        "2 (ef + np) / (2 (ef + np) + nf + ep)",
        "Sokal & Sneath, 'Principles of Numerical Taxonomy', 1963; Lourenço, Lobo & Bação, 2004",
        |c| div(2.0 * (c.ef + c.np), 2.0 * (c.ef + c.np) + c.nf + c.ep);
    rogers_tanimoto "rogers-tanimoto" [] Some("ER4"), Some(Improved),
        "(ef + np) / (ef + np + 2 (nf + ep))",
        "Rogers & Tanimoto, 'A computer program for classifying plants', Science 132, 1960",
        |c| div(c.ef + c.np, c.ef + c.np + 2.0 * (c.nf + c.ep));
    hamming "hamming" ["inner-product"] Some("ER4"), Some(Improved),
        "ef + np",
        "Hamming, 'Error detecting and error correcting codes', Bell Syst. Tech. J. 29, 1950; Naish et al., TOSEM 2011",
        |c| c.ef + c.np;
    euclid "euclid" [] Some("ER4"), Some(Improved),
        "sqrt(ef + np)",
        "Krause, 'Taxicab geometry', Math. Teacher 66, 1973; Naish et al., TOSEM 2011",
        |c| (c.ef + c.np).sqrt();
    wong1 "wong1" ["intersection"] Some("ER5"), Some(Preserved),
        "ef",
        "Wong, Qi, Zhao & Cai, COMPSAC 2007",
        |c| c.ef;
    russell_rao "russell-rao" ["support"] Some("ER5"), Some(Preserved),
        "ef / n",
        "Russell & Rao, 'On habitat and association of species of Anopheline larvae', J. Malaria Inst. India 3, 1940",
        |c| div(c.ef, c.n());
    binary "binary" [] Some("ER5"), Some(Preserved),
        "0 if ef < F, else 1",
        "Naish, Lee & Ramamohanarao, TOSEM 2011",
        |c| if c.ef < c.f() { 0.0 } else { 1.0 };
    scott "scott" [] Some("ER6"), Some(Improved),
        "(4 ef np - (nf + ep)^2) / ((2 ef + nf + ep) (2 np + nf + ep))",
        "Scott, 'Reliability of content analysis: the case of nominal scale coding', Public Opin. Q. 19, 1955",
        |c| div(
            4.0 * c.ef * c.np - (c.nf + c.ep).powi(2),
            (2.0 * c.ef + c.nf + c.ep) * (2.0 * c.np + c.nf + c.ep),
        );
    rogot1 "rogot1" [] Some("ER6"), Some(Improved),
        "(ef / (2 ef + nf + ep) + np / (2 np + nf + ep)) / 2",
        "Rogot & Goldberg, 'A proposed index for measuring agreement in test-retest studies', J. Chronic Dis. 19, 1966",
        |c| 0.5 * (div(c.ef, 2.0 * c.ef + c.nf + c.ep) + div(c.np, 2.0 * c.np + c.nf + c.ep));
    kulczynski1 "kulczynski1" [] None, Some(Improved),
        "ef / (nf + ep)",
        "Kulczyński 1927; Lourenço, Lobo & Bação, 'Binary-based similarity measures for categorical data', 2004",
        |c| div(c.ef, c.nf + c.ep);
    kulczynski2 "kulczynski2" ["driver-kroeber"] None, Some(NonDeterministic),
        "(ef / F + ef / (ef + ep)) / 2",
        "Kulczyński 1927; Lourenço, Lobo & Bação, 2004",
        |c| 0.5 * (div(c.ef, c.f()) + div(c.ef, c.ef + c.ep));
    m1 "m1" ["sokal-sneath3"] None, Some(Improved),
        "(ef + np) / (nf + ep)",
        "Everitt, 'Graphical Techniques for Multivariate Data', 1978",
        |c| div(c.ef + c.np, c.nf + c.ep);
    m2 "m2" [] None, Some(Improved),
        "ef / (ef + np + 2 (nf + ep))",
        "Everitt, 1978",
        |c| div(c.ef, c.ef + c.np + 2.0 * (c.nf + c.ep));
    ample "ample" [] None, Some(Preserved),
        "|ef / F - ep / P|",
        "Dallmeier, Lindig & Zeller, 'Lightweight defect localization for Java', ECOOP 2005; Abreu et al., TAICPART 2007",
        |c| (div(c.ef, c.f()) - div(c.ep, c.p())).abs();
    ample2 "ample2" ["peirce"] None, Some(Preserved),
        "ef / F - ep / P",
        "Xie, Chen, Kuo & Xu, 'A theoretical analysis of the risk evaluation formulas for SBFL', TOSEM 22(4), 2013",
        |c| div(c.ef, c.f()) - div(c.ep, c.p());
    wong3 "wong3" [] None, Some(Improved),
        "ef - h, h = ep if ep <= 2; 2 + 0.1 (ep - 2) if ep <= 10; 2.8 + 0.001 (ep - 10) otherwise",
        "Wong, Qi, Zhao & Cai, COMPSAC 2007",
        |c| c.ef - wong3_h(c.ep);
    arithmetic_mean "arithmetic-mean" [] None, Some(NonDeterministic),
        "2 (ef np - nf ep) / ((ef + ep) (np + nf) + F P)",
        "Rogot & Goldberg, J. Chronic Dis. 19, 1966",
        |c| div(2.0 * det(c), (c.ef + c.ep) * (c.np + c.nf) + c.f() * c.p());
    cohen "cohen" ["kappa"] None, Some(NonDeterministic),
        "2 (ef np - nf ep) / ((ef + ep) P + (nf + np) F)",
        "Cohen, 'A coefficient of agreement for nominal scales', Educ. Psychol. Meas. 20, 1960",
        |c| div(2.0 * det(c), (c.ef + c.ep) * c.p() + (c.nf + c.np) * c.f());
    fleiss "fleiss" [] None, Some(NonDeterministic),
        "(4 ef np - (nf + ep)^2) / (2 F + 2 P)",
        "Fleiss, 'Estimating the accuracy of dichotomous judgments', Psychometrika 30, 1965",
        |c| div(4.0 * c.ef * c.np - (c.nf + c.ep).powi(2), 2.0 * c.n());
    ochiai "ochiai" ["cosine", "otsuka"] None, Some(Improved),
        "ef / sqrt(F (ef + ep))",
        "Ochiai, Bull. Jpn. Soc. Sci. Fish. 22, 1957; Abreu, Zoeteweij & van Gemund, TAICPART-MUTATION 2007",
        |c| div(c.ef, (c.f() * (c.ef + c.ep)).sqrt());

    // ---- Named in the Doric comparison and the SBFL literature ------------------------------
    ochiai2 "ochiai2" ["sokal-sneath5"] None, None,
        "ef np / sqrt((ef + ep) (np + nf) (ef + nf) (ep + np))",
        "Ochiai 1957; Naish, Lee & Ramamohanarao, TOSEM 2011",
        |c| div(c.ef * c.np, margins(c).sqrt());
    dstar2 "dstar2" ["dstar", "d*", "d2"] None, None,
        "ef^2 / (ep + nf)",
        "Wong, Debroy, Gao & Li, 'The DStar method for effective software fault localization', IEEE Trans. Reliab. 63(1), 2014",
        |c| div(c.ef.powi(2), c.ep + c.nf);
    dstar3 "dstar3" ["d3"] None, None,
        "ef^3 / (ep + nf)",
        "Wong, Debroy, Gao & Li, IEEE Trans. Reliab. 2014",
        |c| div(c.ef.powi(3), c.ep + c.nf);
    zoltar "zoltar" [] None, None,
        "ef / (ef + nf + ep + 10000 nf ep / ef)",
        "Gonzalez-Sanchez, 'Automatic error detection techniques based on dynamic invariants', MSc thesis, TU Delft, 2007",
        |c| div(c.ef, c.f() + c.ep + div(10000.0 * c.nf * c.ep, c.ef));
    gp02 "gp02" [] None, None,
        "2 (ef + sqrt(np)) + sqrt(ep)",
        "Yoo, 'Evolving human competitive spectra-based fault localisation techniques', SSBSE 2012; Xie et al., SSBSE 2013",
        |c| 2.0 * (c.ef + c.np.sqrt()) + c.ep.sqrt();
    gp03 "gp03" [] None, None,
        "sqrt(|ef^2 - sqrt(ep)|)",
        "Yoo, SSBSE 2012; Xie et al., SSBSE 2013",
        |c| (c.ef.powi(2) - c.ep.sqrt()).abs().sqrt();
    gp05 "gp05" [] None, None,
        "(ef + np) sqrt(ef) / ((ef + ep) (np nf + sqrt(ep)) (ep + np) sqrt(|ep - np|))",
        "Yoo, 'Evolving human competitive spectra-based fault localisation techniques', SSBSE 2012 (GP05)",
        |c| div(
            (c.ef + c.np) * c.ef.sqrt(),
            (c.ef + c.ep) * (c.np * c.nf + c.ep.sqrt()) * c.p() * (c.ep - c.np).abs().sqrt(),
        );
    gp13 "gp13" [] None, None,
        "ef (1 + 1 / (2 ep + ef))",
        "Yoo, SSBSE 2012; Xie et al., SSBSE 2013",
        |c| c.ef * (1.0 + div(1.0, 2.0 * c.ep + c.ef));
    gp19 "gp19" [] None, None,
        "ef sqrt(|ep - ef + nf - np|)",
        "Yoo, SSBSE 2012; Xie et al., SSBSE 2013",
        |c| c.ef * (c.ep - c.ef + c.nf - c.np).abs().sqrt();
    barinel "barinel" [] None, None,
        "1 - ep / (ep + ef)",
        "Abreu, Zoeteweij & van Gemund, 'Spectrum-based multiple fault localization', ASE 2009",
        |c| 1.0 - div(c.ep, c.ep + c.ef);
    geometric_mean "geometric-mean" ["phi", "pearson-heron1"] None, None,
        "(ef np - nf ep) / sqrt((ef + ep) (np + nf) (ef + nf) (ep + np))",
        "Maxwell & Pilliner, 'Deriving coefficients of reliability and agreement for ratings', Br. J. Math. Stat. Psychol. 21, 1968",
        |c| div(det(c), margins(c).sqrt());
    harmonic_mean "harmonic-mean" [] None, None,
        "(ef np - nf ep) ((ef + ep) (np + nf) + F P) / ((ef + ep) (np + nf) F P)",
        "Rogot & Goldberg, J. Chronic Dis. 19, 1966; Naish et al., TOSEM 2011",
        |c| div(det(c) * ((c.ef + c.ep) * (c.np + c.nf) + c.f() * c.p()), margins(c));
    rogot2 "rogot2" ["sokal-sneath4"] None, None,
        "(ef / (ef + ep) + ef / F + np / (np + nf) + np / P) / 4",
        "Rogot & Goldberg, J. Chronic Dis. 19, 1966; Sokal & Sneath 1963",
        |c| 0.25 * (div(c.ef, c.ef + c.ep) + div(c.ef, c.f()) + div(c.np, c.np + c.nf) + div(c.np, c.p()));
    dennis "dennis" [] None, None,
        "(ef np - nf ep) / sqrt(n (ef + ep) F)",
        "Dennis, 'The construction of a thesaurus automatically from a sample of text', 1965; Choi, Cha & Tappert 2010",
        |c| div(det(c), (c.n() * (c.ef + c.ep) * c.f()).sqrt());
    overlap "overlap" [] None, None,
        "ef / min(ef, nf, ep)",
        "Naish, Lee & Ramamohanarao, TOSEM 2011",
        |c| div(c.ef, c.ef.min(c.nf).min(c.ep));

    // ---- Association-rule interestingness measures (A = ran the unit, B = failed) -----------
    klosgen "klosgen" [] None, None,
        "sqrt(P(AB)) max(P(B|A) - P(B), P(A|B) - P(A))",
        "Klösgen, 'Explora: a multipattern and multistrategy discovery assistant', 1996; Tan, Kumar & Srivastava, Inf. Syst. 29(4), 2004",
        |c| {
            let (ab, a, b) = probs(c);
            ab.sqrt() * (div(c.ef, c.ef + c.ep) - b).max(div(c.ef, c.f()) - a)
        };
    added_value "added-value" [] None, None,
        "max(P(B|A) - P(B), P(A|B) - P(A))",
        "Sahar & Mansour, 1999; Tan, Kumar & Srivastava, Inf. Syst. 29(4), 2004",
        |c| {
            let (_, a, b) = probs(c);
            (div(c.ef, c.ef + c.ep) - b).max(div(c.ef, c.f()) - a)
        };
    certainty "certainty" ["certainty-factor"] None, None,
        "max((P(B|A) - P(B)) / (1 - P(B)), (P(A|B) - P(A)) / (1 - P(A)))",
        "Shortliffe & Buchanan, 'A model of inexact reasoning in medicine', Math. Biosci. 23, 1975; Tan et al. 2004",
        |c| {
            let (_, a, b) = probs(c);
            div(div(c.ef, c.ef + c.ep) - b, 1.0 - b).max(div(div(c.ef, c.f()) - a, 1.0 - a))
        };
    laplace "laplace" [] None, None,
        "(ef + 1) / (ef + ep + 2)",
        "Clark & Boswell, 'Rule induction with CN2', EWSL 1991; Tan et al. 2004",
        |c| (c.ef + 1.0) / (c.ef + c.ep + 2.0);
    conviction "conviction" [] None, None,
        "P(A) P(not B) / P(A not B) = (ef + ep) P / (n ep)",
        "Brin, Motwani, Ullman & Tsur, 'Dynamic itemset counting and implication rules', SIGMOD 1997",
        |c| div((c.ef + c.ep) * c.p(), c.n() * c.ep);
    lift "lift" ["interest", "forbes"] None, None,
        "P(AB) / (P(A) P(B)) = n ef / ((ef + ep) F)",
        "Forbes, 1907; Brin, Motwani & Silverstein, SIGMOD 1997 (interest); Tan et al. 2004",
        |c| div(c.n() * c.ef, (c.ef + c.ep) * c.f());
    piatetsky_shapiro "piatetsky-shapiro" ["leverage-ps"] None, None,
        "P(AB) - P(A) P(B)",
        "Piatetsky-Shapiro, 'Discovery, analysis and presentation of strong rules', 1991",
        |c| {
            let (ab, a, b) = probs(c);
            ab - a * b
        };
    odds_ratio "odds-ratio" [] None, None,
        "ef np / (ep nf)",
        "Mosteller, 'Association and estimation in contingency tables', JASA 63, 1968; Tan et al. 2004",
        |c| div(c.ef * c.np, c.ep * c.nf);
    yule_q "yule-q" [] None, None,
        "(ef np - ep nf) / (ef np + ep nf)",
        "Yule, 'On the association of attributes in statistics', Phil. Trans. R. Soc. A 194, 1900",
        |c| div(det(c), c.ef * c.np + c.ep * c.nf);
    yule_y "yule-y" ["yule-w"] None, None,
        "(sqrt(ef np) - sqrt(ep nf)) / (sqrt(ef np) + sqrt(ep nf))",
        "Yule, 'On the methods of measuring association between two attributes', J. R. Stat. Soc. 75, 1912",
        |c| {
            let (x, y) = ((c.ef * c.np).sqrt(), (c.ep * c.nf).sqrt());
            div(x - y, x + y)
        };
    collective_strength "collective-strength" [] None, None,
        "(P(AB) + P(not A not B)) / (P(A) P(B) + P(not A) P(not B)) * (1 - P(A) P(B) - P(not A) P(not B)) / (1 - P(AB) - P(not A not B))",
        "Aggarwal & Yu, 'A new framework for itemset generation', PODS 1998; Tan et al. 2004",
        |c| {
            let (ab, a, b) = probs(c);
            let nanb = div(c.np, c.n());
            let chance = a * b + (1.0 - a) * (1.0 - b);
            div(ab + nanb, chance) * div(1.0 - chance, 1.0 - ab - nanb)
        };
    j_measure "j-measure" [] None, None,
        "P(AB) ln(P(B|A) / P(B)) + P(A not B) ln(P(not B|A) / P(not B))",
        "Smyth & Goodman, 'Rule induction using information theory', 1991; Tan et al. 2004",
        |c| {
            let n = c.n();
            let (ab, anb) = (div(c.ef, n), div(c.ep, n));
            let a = c.ef + c.ep;
            ab * ln(div(div(c.ef, a), div(c.f(), n))) + anb * ln(div(div(c.ep, a), div(c.p(), n)))
        };
    gini "gini" ["gini-index"] None, None,
        "P(A) (P(B|A)^2 + P(not B|A)^2) + P(not A) (P(B|not A)^2 + P(not B|not A)^2) - P(B)^2 - P(not B)^2",
        "Breiman, Friedman, Olshen & Stone, 'Classification and Regression Trees', 1984; Tan et al. 2004",
        |c| {
            let n = c.n();
            let (ran, not) = (c.ef + c.ep, c.nf + c.np);
            div(ran, n) * (div(c.ef, ran).powi(2) + div(c.ep, ran).powi(2))
                + div(not, n) * (div(c.nf, not).powi(2) + div(c.np, not).powi(2))
                - div(c.f(), n).powi(2)
                - div(c.p(), n).powi(2)
        };
    mutual_information "mutual-information" [] None, None,
        "sum over cells P(x,y) ln(P(x,y) / (P(x) P(y))) / min(H(A), H(B))",
        "Tan, Kumar & Srivastava, 'Selecting the right objective measure for association analysis', Inf. Syst. 29(4), 2004",
        |c| {
            let n = c.n();
            let cell = |xy: f64, x: f64, y: f64| {
                if xy == 0.0 { 0.0 } else { div(xy, n) * ln(div(xy * n, x * y)) }
            };
            let (ran, not) = (c.ef + c.ep, c.nf + c.np);
            let mi = cell(c.ef, ran, c.f()) + cell(c.ep, ran, c.p()) + cell(c.nf, not, c.f()) + cell(c.np, not, c.p());
            let h = |x: f64| if x == 0.0 { 0.0 } else { -div(x, n) * ln(div(x, n)) };
            div(mi, (h(ran) + h(not)).min(h(c.f()) + h(c.p())))
        };
    loevinger "loevinger" [] None, None,
        "1 - P(A not B) / (P(A) P(not B)) = 1 - n ep / ((ef + ep) P)",
        "Loevinger, 'A systematic approach to the construction and evaluation of tests of ability', Psychol. Monogr. 61, 1947; Tan et al. 2004",
        |c| 1.0 - div(c.n() * c.ep, (c.ef + c.ep) * c.p());
    sebag_schoenauer "sebag-schoenauer" [] None, None,
        "P(AB) / P(A not B) = ef / ep",
        "Sebag & Schoenauer, 'Generation of rules with certainty and confidence factors from incomplete and incoherent learning bases', 1988",
        |c| div(c.ef, c.ep);
    zhang "zhang" [] None, None,
        "(P(AB) - P(A) P(B)) / max(P(AB) P(not B), P(B) P(A not B))",
        "Zhang, 'Association rules in web usage mining', 2000; Geng & Hamilton, ACM Comput. Surv. 38(3), 2006",
        |c| {
            let (ab, a, b) = probs(c);
            div(ab - a * b, (ab * (1.0 - b)).max(b * div(c.ep, c.n())))
        };
    least_contradiction "least-contradiction" [] None, None,
        "(P(AB) - P(A not B)) / P(B) = (ef - ep) / F",
        "Azé & Kodratoff, 'A study of the effect of noisy data in rule extraction systems', 2002; Geng & Hamilton 2006",
        |c| div(c.ef - c.ep, c.f());
    odd_multiplier "odd-multiplier" [] None, None,
        "P(AB) P(not B) / (P(B) P(A not B)) = ef P / (F ep)",
        "Geng & Hamilton, 'Interestingness measures for data mining: a survey', ACM Comput. Surv. 38(3), 2006",
        |c| div(c.ef * c.p(), c.f() * c.ep);
    example_counterexample "example-counterexample" [] None, None,
        "1 - P(A not B) / P(AB) = 1 - ep / ef",
        "Lallich, Vaillant & Lenca, 2004; Geng & Hamilton 2006",
        |c| 1.0 - div(c.ep, c.ef);
    one_way_support "one-way-support" [] None, None,
        "P(B|A) log2(P(AB) / (P(A) P(B)))",
        "Yao & Zhong, 'An analysis of quantitative measures associated with rules', PAKDD 1999",
        |c| div(c.ef, c.ef + c.ep) * ln(div(c.n() * c.ef, (c.ef + c.ep) * c.f())) / std::f64::consts::LN_2;
    two_way_support "two-way-support" [] None, None,
        "P(AB) log2(P(AB) / (P(A) P(B)))",
        "Yao & Zhong, PAKDD 1999",
        |c| div(c.ef, c.n()) * ln(div(c.n() * c.ef, (c.ef + c.ep) * c.f())) / std::f64::consts::LN_2;
    information_gain "information-gain" ["gilbert-wells"] None, None,
        "ln(P(AB) / (P(A) P(B))) = ln(n ef / ((ef + ep) F))",
        "Church & Hanks, 'Word association norms, mutual information, and lexicography', 1990; Gilbert & Wells 1966",
        |c| ln(div(c.n() * c.ef, (c.ef + c.ep) * c.f()));
    leverage "leverage" [] None, None,
        "P(B|A) - P(A) P(B)",
        "Piatetsky-Shapiro 1991 as in Lucia, Lo, Jiang, Thung & Budi, 'Extended comprehensive study of association measures for fault localization', JSEP 26(2), 2014",
        |c| {
            let (_, a, b) = probs(c);
            div(c.ef, c.ef + c.ep) - a * b
        };
    relative_risk "relative-risk" [] None, None,
        "P(B|A) / P(B|not A) = (ef / (ef + ep)) / (nf / (nf + np))",
        "Cornfield, 1951; Geng & Hamilton 2006",
        |c| div(div(c.ef, c.ef + c.ep), div(c.nf, c.nf + c.np));
    recall "recall" ["sensitivity"] None, None,
        "P(A|B) = ef / F",
        "Geng & Hamilton, ACM Comput. Surv. 2006; Lucia et al., JSEP 2014",
        |c| div(c.ef, c.f());
    specificity "specificity" [] None, None,
        "P(not B|not A) = np / (nf + np)",
        "Geng & Hamilton, ACM Comput. Surv. 2006; Lucia et al., JSEP 2014",
        |c| div(c.np, c.nf + c.np);

    // ---- Binary similarity coefficients (Choi, Cha & Tappert 2010) --------------------------
    jaccard_3w "3w-jaccard" [] None, None,
        "3 ef / (3 ef + ep + nf)",
        "Choi, Cha & Tappert, 'A survey of binary similarity and distance measures', J. Syst. Cybern. Inform. 8(1), 2010",
        |c| div(3.0 * c.ef, 3.0 * c.ef + c.ep + c.nf);
    faith "faith" [] None, None,
        "(ef + np / 2) / n",
        "Faith, 'Asymmetric binary similarity measures', Oecologia 57, 1983",
        |c| div(c.ef + 0.5 * c.np, c.n());
    gower_legendre "gower-legendre" [] None, None,
        "(ef + np) / (ef + (ep + nf) / 2 + np)",
        "Gower & Legendre, 'Metric and Euclidean properties of dissimilarity coefficients', J. Classif. 3, 1986",
        |c| div(c.ef + c.np, c.ef + 0.5 * (c.ep + c.nf) + c.np);
    gower "gower" [] None, None,
        "(ef + np) / sqrt((ef + ep) (ef + nf) (ep + np) (nf + np))",
        "Gower, 'A general coefficient of similarity and some of its properties', Biometrics 27, 1971; Choi et al. 2010",
        |c| div(c.ef + c.np, margins(c).sqrt());
    sorgenfrei "sorgenfrei" [] None, None,
        "ef^2 / ((ef + ep) F)",
        "Sorgenfrei, 'Molluscan assemblages from the marine middle Miocene of South Jutland', 1958; Choi et al. 2010",
        |c| div(c.ef.powi(2), (c.ef + c.ep) * c.f());
    mountford "mountford" [] None, None,
        "ef / ((ef ep + ef nf) / 2 + ep nf)",
        "Mountford, 'An index of similarity and its application to classificatory problems', 1962; Choi et al. 2010",
        |c| div(c.ef, 0.5 * (c.ef * c.ep + c.ef * c.nf) + c.ep * c.nf);
    mcconnaughey "mcconnaughey" [] None, None,
        "(ef^2 - ep nf) / ((ef + ep) F)",
        "McConnaughey, 'The determination and analysis of plankton communities', 1964; Choi et al. 2010",
        |c| div(c.ef.powi(2) - c.ep * c.nf, (c.ef + c.ep) * c.f());
    tarwid "tarwid" [] None, None,
        "(n ef - (ef + ep) F) / (n ef + (ef + ep) F)",
        "Tarwid, 'Szacowanie zbieżności nisz ekologicznych gatunków', Ekol. Pol. B 6, 1960; Choi et al. 2010",
        |c| div(c.n() * c.ef - (c.ef + c.ep) * c.f(), c.n() * c.ef + (c.ef + c.ep) * c.f());
    simpson "simpson" [] None, None,
        "ef / min(ef + ep, F)",
        "Simpson, 'Mammals and the nature of continents', Am. J. Sci. 241, 1943; Choi et al. 2010",
        |c| div(c.ef, (c.ef + c.ep).min(c.f()));
    braun_banquet "braun-banquet" [] None, None,
        "ef / max(ef + ep, F)",
        "Braun-Blanquet, 'Plant Sociology', 1932; Choi et al. 2010",
        |c| div(c.ef, (c.ef + c.ep).max(c.f()));
    fager_mcgowan "fager-mcgowan" [] None, None,
        "ef / sqrt((ef + ep) F) - 1 / (2 sqrt(max(ef + ep, F)))",
        "Fager & McGowan, 'Zooplankton species groups in the North Pacific', Science 140, 1963",
        |c| div(c.ef, ((c.ef + c.ep) * c.f()).sqrt()) - div(1.0, 2.0 * (c.ef + c.ep).max(c.f()).sqrt());
    forbes2 "forbes2" [] None, None,
        "(n ef - (ef + ep) F) / (n min(ef + ep, F) - (ef + ep) F)",
        "Forbes, 'On the local distribution of certain Illinois fishes', 1925; Choi et al. 2010",
        |c| div(c.n() * c.ef - (c.ef + c.ep) * c.f(), c.n() * (c.ef + c.ep).min(c.f()) - (c.ef + c.ep) * c.f());
    fossum "fossum" [] None, None,
        "n (ef - 1/2)^2 / ((ef + ep) F)",
        "Fossum & Kaskey, 'Optimization and standardization of information retrieval language and systems', 1966; Choi et al. 2010",
        |c| div(c.n() * (c.ef - 0.5).powi(2), (c.ef + c.ep) * c.f());
    pearson1 "pearson1" ["chi-square"] None, None,
        "n (ef np - ep nf)^2 / ((ef + ep) F (nf + np) (ep + np))",
        "Pearson, 'On the criterion that a given system of deviations ... ', Phil. Mag. 50, 1900; Choi et al. 2010",
        |c| div(c.n() * det(c).powi(2), margins(c));
    pearson2 "pearson2" [] None, None,
        "sqrt(chi2 / (n + chi2)), chi2 = Pearson I",
        "Pearson 1900 (coefficient of mean square contingency); Choi et al. 2010",
        |c| {
            let chi = div(c.n() * det(c).powi(2), margins(c));
            div(chi, c.n() + chi).sqrt()
        };
    pearson3 "pearson3" [] None, None,
        "sign(r) sqrt(|r| / (n + r)), r = geometric-mean (phi)",
        "Pearson 1926 as in Choi et al. 2010 (signed, so a negative correlation is never a NaN)",
        |c| {
            let r = div(det(c), margins(c).sqrt());
            r.signum() * div(r.abs(), c.n() + r).max(0.0).sqrt()
        };
    pearson_heron2 "pearson-heron2" [] None, None,
        "cos(pi sqrt(ep nf) / (sqrt(ef np) + sqrt(ep nf)))",
        "Pearson & Heron, 'On theories of association', Biometrika 9, 1913; Choi et al. 2010",
        |c| {
            let (x, y) = ((c.ef * c.np).sqrt(), (c.ep * c.nf).sqrt());
            (std::f64::consts::PI * div(y, x + y)).cos()
        };
    stiles "stiles" [] None, None,
        "log10(n (|ef np - ep nf| - n/2)^2 / ((ef + ep) F (ep + np) (nf + np)))",
        "Stiles, 'The association factor in information retrieval', J. ACM 8, 1961; Choi et al. 2010",
        |c| ln(div(c.n() * (det(c).abs() - 0.5 * c.n()).powi(2), margins(c))) / std::f64::consts::LN_10;
    dispersion "dispersion" [] None, None,
        "(ef np - ep nf) / n^2",
        "Choi, Cha & Tappert 2010",
        |c| div(det(c), c.n().powi(2));
    michael "michael" [] None, None,
        "4 (ef np - ep nf) / ((ef + np)^2 + (ep + nf)^2)",
        "Michael, 'Marine ecology of the coastal waters', 1920; Choi et al. 2010",
        |c| div(4.0 * det(c), (c.ef + c.np).powi(2) + (c.ep + c.nf).powi(2));
    goodman_kruskal "goodman-kruskal" ["lambda"] None, None,
        "(s - s') / (2n - s'), s = max(ef,ep) + max(nf,np) + max(ef,nf) + max(ep,np), s' = max(F,P) + max(ef+ep, nf+np)",
        "Goodman & Kruskal, JASA 49, 1954 (lambda); Choi et al. 2010",
        |c| {
            let (s, s2) = sigmas(c);
            div(s - s2, 2.0 * c.n() - s2)
        };
    anderberg_d "anderberg-d" [] None, None,
        "(s - s') / (2n), s and s' as in goodman-kruskal",
        "Anderberg, 'Cluster Analysis for Applications', 1973; Choi et al. 2010",
        |c| {
            let (s, s2) = sigmas(c);
            div(s - s2, 2.0 * c.n())
        };
    baroni_urbani_buser1 "baroni-urbani-buser1" [] None, None,
        "(sqrt(ef np) + ef) / (sqrt(ef np) + ef + ep + nf)",
        "Baroni-Urbani & Buser, 'Similarity of binary data', Syst. Zool. 25, 1976",
        |c| {
            let r = (c.ef * c.np).sqrt();
            div(r + c.ef, r + c.ef + c.ep + c.nf)
        };
    baroni_urbani_buser2 "baroni-urbani-buser2" [] None, None,
        "(sqrt(ef np) + ef - ep - nf) / (sqrt(ef np) + ef + ep + nf)",
        "Baroni-Urbani & Buser, Syst. Zool. 25, 1976",
        |c| {
            let r = (c.ef * c.np).sqrt();
            div(r + c.ef - c.ep - c.nf, r + c.ef + c.ep + c.nf)
        };
    eyraud "eyraud" [] None, None,
        "n^2 (n ef - (ef + ep) F) / ((ef + ep) F (ep + np) (nf + np))",
        "Eyraud, 'Les principes de la mesure des corrélations', 1936; Choi et al. 2010",
        |c| div(c.n().powi(2) * (c.n() * c.ef - (c.ef + c.ep) * c.f()), margins(c));
}
