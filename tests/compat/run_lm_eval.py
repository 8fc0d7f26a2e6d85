"""lm-eval's own command line (``lm_eval run ...``), with one setting its
command line does not expose: ``bootstrap_iters`` (lm-eval's default
100,000 resamples for the stderr of median, f1, mcc, perplexity...; the
differential tests compare values, and stderrs only where lm-eval computes
them in closed form, so 100 resamples are enough and keep the run short).
Run with lm-eval's interpreter: ``.venv-lmeval/bin/python
tests/compat/run_lm_eval.py run --model ...``."""
import functools

import lm_eval
import lm_eval.evaluator as evaluator

if __name__ == "__main__":
    quick = functools.partial(evaluator.simple_evaluate, bootstrap_iters=100)
    evaluator.simple_evaluate = quick
    lm_eval.simple_evaluate = quick  # the CLI's `from lm_eval import simple_evaluate`
    from lm_eval.__main__ import cli_evaluate

    cli_evaluate()
