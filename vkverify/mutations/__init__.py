"""Mutation testing of synchronization: drop or weaken one load-bearing synchronization operation at a
time and demand that every reader (checker, simulator, replay, a user's command) goes red.

    from vkverify.mutations import analyze, mutants
    analysis = analyze(stream)              # load-bearing and redundant operations
    found, equivalent = mutants(stream, "s.json", analysis)
"""

from .generate import TARGETS, Equivalent, Mutant, mutants, plain
from .load_bearing import Analysis, Redundancy, analyze
from .readers import READERS, CmdReader, Reader, MutantVerdict
from .runner import Cache, Outcome, Stats, run, shard

__all__ = [
           "READERS",
           "TARGETS",
           "Analysis",
           "Cache",
           "CmdReader",
           "Equivalent",
           "Mutant",
           "MutantVerdict",
           "Outcome",
           "Reader",
           "Redundancy",
           "Stats",
           "analyze",
           "mutants",
           "plain",
           "run",
           "shard",
]
