"""The suite's own LLM calls (label extraction, rewriting): one client factory, versioned prompts,
vcrpy cassettes for replay, and a content-addressed cache so reruns make no calls."""
