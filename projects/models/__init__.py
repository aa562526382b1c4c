from projects.models.base import CanonStatus, EditVersioned
from projects.models.chapters import (
    ArchivedSummary,
    Chapter,
    ChapterLog,
    ChapterSummary,
    Evaluation,
    GateDecision,
    MemoryLevel,
)
from projects.models.characters import Character, CharacterStatus
from projects.models.foreshadowing import STATUS_RANK, Foreshadowing, ForeshadowingEvent
from projects.models.project import (
    CHECKPOINT_FIELDS,
    ExtraFile,
    GenreDriveType,
    Membership,
    OrchestratorState,
    PipelineStage,
    Project,
    QuickstartPhase,
    Role,
    TargetPlatform,
    VolumePipelineStage,
)
from projects.models.state import ChangeSource, StateChange, StoryState, VolumeStateSnapshot
from projects.models.storylines import Storyline, StorylineScope, StorylineStatus
from projects.models.volumes import ChapterContract, Volume, VolumeStatus
from projects.models.world import ConstraintType, ResearchNote, WorldDoc, WorldRule

__all__ = [
    "ArchivedSummary", "CanonStatus", "ChangeSource", "Chapter", "ChapterContract", "ChapterLog", "ChapterSummary",
    "Character", "CharacterStatus", "CHECKPOINT_FIELDS", "ConstraintType", "EditVersioned", "Evaluation",
    "ExtraFile", "Foreshadowing", "ForeshadowingEvent", "GateDecision", "GenreDriveType", "Membership",
    "MemoryLevel", "OrchestratorState", "PipelineStage", "Project", "QuickstartPhase", "ResearchNote", "Role",
    "TargetPlatform",
    "StateChange", "STATUS_RANK", "StoryState", "Storyline", "StorylineScope", "StorylineStatus", "Volume",
    "VolumePipelineStage", "VolumeStateSnapshot", "VolumeStatus", "WorldDoc", "WorldRule",
]
