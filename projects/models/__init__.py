from projects.models.base import CanonStatus, EditVersioned
from projects.models.chapters import (
    AppearanceSource,
    ArchivedSummary,
    Chapter,
    ChapterLog,
    ChapterSummary,
    CharacterAppearance,
    Evaluation,
    GateDecision,
    MemoryLevel,
)
from projects.models.characters import Character, CharacterStatus
from projects.models.facts import FactKind, FactOrigin, FactStatus, StoryFact
from projects.models.foreshadowing import STATUS_RANK, Foreshadowing, ForeshadowingEvent
from projects.models.project import (
    CHECKPOINT_FIELDS,
    ExtraFile,
    GenreDriveType,
    ImportedFile,
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
from projects.models.voice import VoiceSample, VoiceSource
from projects.models.volumes import ChapterContract, Volume, VolumeStatus
from projects.models.world import ConstraintType, ResearchNote, WorldDoc, WorldRule

__all__ = [
    "ArchivedSummary", "CanonStatus", "ChangeSource", "Chapter", "ChapterContract", "ChapterLog", "ChapterSummary",
    "Character", "CharacterStatus", "CHECKPOINT_FIELDS", "ConstraintType", "EditVersioned", "Evaluation",
    "ExtraFile", "FactKind", "FactOrigin", "FactStatus", "Foreshadowing", "ForeshadowingEvent", "GateDecision",
    "GenreDriveType", "ImportedFile", "Membership",
    "MemoryLevel", "OrchestratorState", "PipelineStage", "Project", "QuickstartPhase", "ResearchNote", "Role",
    "TargetPlatform",
    "StateChange", "STATUS_RANK", "StoryFact", "StoryState", "Storyline", "StorylineScope", "StorylineStatus", "Volume",
    "VolumePipelineStage", "VolumeStateSnapshot", "VolumeStatus", "WorldDoc", "WorldRule",
]
__all__ += ["AppearanceSource", "CharacterAppearance", "VoiceSample", "VoiceSource"]
