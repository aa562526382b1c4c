import factory

from projects.models import Chapter, Character, Membership, Project, Volume
from projects.state_ops import empty_state


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project
        skip_postgeneration_save = True

    slug = factory.Sequence(lambda n: f"novel-{n}")
    title = factory.Sequence(lambda n: f"小说 {n}")

    @factory.post_generation
    def story_state(obj, create, extracted, **kwargs):
        if create:
            from projects.models import StoryState

            StoryState.objects.get_or_create(project=obj, defaults={"data": empty_state()})


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    project = factory.SubFactory(ProjectFactory)
    role = "viewer"


class VolumeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Volume

    project = factory.SubFactory(ProjectFactory)
    number = factory.Sequence(lambda n: n + 1)


class CharacterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Character

    project = factory.SubFactory(ProjectFactory)
    slug = factory.Sequence(lambda n: f"character-{n}")
    display_name = factory.Sequence(lambda n: f"角色{n}")


class ChapterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Chapter

    project = factory.SubFactory(ProjectFactory)
    volume = factory.SubFactory(VolumeFactory, project=factory.SelfAttribute("..project"))
    number = factory.Sequence(lambda n: n + 1)
    text = factory.Sequence(lambda n: f"第{n}章。林枫走进雪原，风很冷。")
