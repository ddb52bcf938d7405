"""The words a skip reason starts with, read by the gates that skip, the pytest plugin that reports
them and the verdict that counts them (docs/gate-your-model.md, "Gates and findings")."""
from __future__ import annotations

#: a test about something the run does not have (no live model, no dataset, a protocol with no answers):
#: reported as N/A, never counted for or against the verdict
NOT_APPLICABLE = "not applicable: "
