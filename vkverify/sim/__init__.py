"""The simulator: a stream's data effects in numpy, in the checker's legal serial order (the
reference) and under adversarial schedules that turn each finding into a changed digest.

Imports only the model, the shaders' numpy semantics and the checker; never Vulkan.
"""

from .report import FORMATS, ScheduleResult, SimReport, SimResult, FindingVerdict
from .simulate import reference, simulate

__all__ = ["FORMATS", "FindingVerdict", "ScheduleResult", "SimReport", "SimResult", "reference", "simulate"]
