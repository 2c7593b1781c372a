# Reference REML fits from R's lme4 (Debian r-cran-lme4) for
# tests/stats/factors_test.cc: reads the grids the C++ test drew (JSON, the
# "factors" cases), fits y ~ fixed terms + (1 | random term) ... with
# REML = TRUE, the optimiser's tolerances tightened, and writes the variance
# components, the REML log-likelihood and R's own ANOVA table (JSON).
#   Rscript lme4_reference.R IN.json OUT.json
suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
cases <- fromJSON(args[1], simplifyVector = FALSE)$factors

term_r <- function(t) paste(unlist(t$factors), collapse = ":")

fit_case <- function(c) {
  d <- data.frame(y = unlist(c$y))
  for (f in names(c$columns)) d[[f]] <- factor(unlist(c$columns[[f]]))
  fixed <- Filter(function(t) isTRUE(t$fixed), c$terms)
  random <- Filter(function(t) !isTRUE(t$fixed), c$terms)
  rhs <- c("1", vapply(fixed, term_r, ""),
           vapply(random, function(t) sprintf("(1 | %s)", term_r(t)), ""))
  form <- as.formula(paste("y ~", paste(rhs, collapse = " + ")))
  ctrl <- lmerControl(optimizer = "nloptwrap", calc.derivs = FALSE,
                      check.conv.singular = "ignore",
                      optCtrl = list(xtol_abs = 1e-14, ftol_abs = 1e-16,
                                     xtol_rel = 1e-14, ftol_rel = 1e-16,
                                     maxeval = 100000))
  fit <- lmer(form, data = d, REML = TRUE, control = ctrl)
  vc <- as.data.frame(VarCorr(fit))
  comps <- list()
  for (i in seq_len(nrow(vc))) {
    name <- if (vc$grp[i] == "Residual") "residual" else vc$grp[i]
    comps[[name]] <- vc$vcov[i]
  }
  out <- list(components = comps, loglik = as.numeric(logLik(fit)))
  if (isTRUE(c$balanced)) {
    lhs <- paste(vapply(c$terms, term_r, ""), collapse = " + ")
    a <- anova(lm(as.formula(paste("y ~", lhs)), data = d))
    out$anova_ss <- unname(a[["Sum Sq"]])
    out$anova_df <- unname(a[["Df"]])
  }
  out
}

write(toJSON(list(factors = lapply(cases, fit_case)), digits = NA, auto_unbox = TRUE),
      args[2])
