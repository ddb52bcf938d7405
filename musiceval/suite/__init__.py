"""The suite: which model is under test, its answers, thresholds, check rules and release profile."""
from musiceval.suite.config import CheckRule, ModelDecl, AnswerSource, SuiteConfig, config_for_answers, load_config
from musiceval.keys import margin_for
from musiceval.suite.schema import ConfigError

__all__ = ["CheckRule", "ConfigError", "ModelDecl", "AnswerSource", "SuiteConfig", "config_for_answers", "load_config",
           "margin_for"]
