"""The plan step on its own: pure functions from options (and a saved run) to a frozen RunPlan."""

import dataclasses
import re

import numpy as np
import pytest

from ironlearn.fitting import FitOptions, UsageError, make_plan, resume_options
from ironlearn.fitting.options import flag, validate
from ironlearn.fitting.plan import DEFAULT_TIME_BUDGET, RETRY_LR_FACTOR, fingerprint
from ironlearn.fitting.presets import PRESETS
from ironlearn.fitting.regimes import PIXEL_SPLINE, WHOLE_FINEST_LOG2, hashgrid_size
from ironlearn.image.io import Picture
from ironlearn.nn import HashGrid
from ironlearn.nn.encodings import LOG2_TABLE_SIZES
from ironlearn.optim import default_warmup_steps


def picture(width=64, height=48, channels=1, mode="gray"):
    pixels = np.random.default_rng(0).uniform(size=(height, width, channels)).astype(np.float32)
    return Picture(values=pixels, mode=mode, source="p.png")


def saved_settings(pic, **changes):
    plan = make_plan(FitOptions("p.png", out="run", steps=100, batch_size=300), pic)
    return {**plan.settings(device="cpu", train_seconds=12.5), **changes}


def test_plan_resolves_every_default():
    plan = make_plan(FitOptions("p.png"), picture())
    assert plan.model == "hashgrid" and plan.seed == 0 and plan.schedule == "cosine"
    assert plan.lr == PRESETS["hashgrid"].lr and plan.batch_size is None
    assert plan.steps is None and plan.time_budget == DEFAULT_TIME_BUDGET  # calibrated later
    assert plan.out == "runs/p" and plan.start_step == 0 and plan.prior_seconds == 0.0
    assert plan.model_options["finest"] == 64 and plan.model_options["log2_table_size"] in LOG2_TABLE_SIZES


def test_plan_is_frozen_and_never_mutates_its_input():
    options = FitOptions("p.png", model_options={"width": 8})
    before = dataclasses.asdict(options)
    plan = make_plan(options, picture())
    assert dataclasses.asdict(options) == before
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.lr = 1.0
    gentler = plan.gentler()
    assert gentler.lr == pytest.approx(0.3 * plan.lr) and plan.lr == PRESETS["hashgrid"].lr


def test_a_batch_as_large_as_the_picture_is_the_full_batch():
    assert make_plan(FitOptions("p.png", model="siren"), picture(32, 32)).batch_size is None  # 8192 >= 1024
    assert make_plan(FitOptions("p.png", batch_size=100), picture(32, 32)).batch_size == 100
    assert make_plan(FitOptions("p.png", model="siren", batch_size=0), picture(200, 200)).batch_size is None


def test_calibration_fills_the_steps_from_the_time_budget():
    plan = make_plan(FitOptions("p.png", time_budget=10), picture())
    assert plan.calibrated(0.01).steps == 1000
    assert plan.calibrated(100.0).steps == 10  # never fewer than MIN_STEPS


def test_a_timed_plan_replans_to_what_the_rest_of_its_budget_allows():
    plan = make_plan(FitOptions("p.png", time_budget=10), picture()).calibrated(0.01)
    assert plan.timed and plan.steps == 1000
    assert plan.replanned(step=400, train_seconds=6.0, seconds_per_step=0.02).steps == 600  # slowed down
    assert plan.replanned(step=400, train_seconds=2.0, seconds_per_step=0.005).steps == 2000  # sped up
    assert plan.replanned(step=400, train_seconds=11.0, seconds_per_step=0.01).steps == 401  # over budget
    assert not make_plan(FitOptions("p.png", steps=50, time_budget=10), picture()).timed  # given steps stay


@pytest.mark.parametrize("timed", [True, False])
def test_a_resumed_timed_run_stays_timed_until_its_budget_is_spent(timed):
    pic = picture()
    saved = saved_settings(pic, time_budget=30.0, timed=timed)
    plan = make_plan(resume_options(FitOptions("p.png", resume=True), saved), pic, saved, start_step=100)
    assert plan.timed is timed
    assert plan.nothing_left is not timed  # at its 100 steps, with 17.5 s of its budget left
    given = make_plan(resume_options(FitOptions("p.png", steps=200, resume=True), saved), pic, saved, start_step=100)
    assert not given.timed and given.steps == 200


def test_a_timed_run_at_its_planned_steps_a_hair_short_of_its_budget_is_done():
    """It stopped at 0.998 s of 1 on its steps, and the same command trained it again."""
    pic = picture()
    saved = saved_settings(pic, time_budget=30.0, timed=True)
    for trained, done in ((29.8, True), (29.6, False)):  # within 1% of the budget, or not
        plan = make_plan(resume_options(FitOptions("p.png", resume=True), {**saved, "train_seconds": trained}),
                         pic, {**saved, "train_seconds": trained}, start_step=100)
        assert plan.nothing_left is done


def test_the_schedule_warms_up_by_the_policy_then_anneals():
    plan = dataclasses.replace(make_plan(FitOptions("p.png"), picture()), steps=4000)
    schedule = plan.make_schedule()
    assert schedule.warmup_steps == default_warmup_steps(4000) == 80
    assert schedule(0) < schedule(79) == pytest.approx(plan.lr) and schedule(3999) < plan.lr / 10
    constant = dataclasses.replace(plan, schedule="constant").make_schedule()
    assert constant(0) == constant(3999) == plan.lr


def finest_level_is_whole(options) -> bool:
    """The finest level's vertices each have a row of their own: no hash collisions there."""
    corners, finest = options["vertices"] == "corners", options["finest"]
    _, rows = HashGrid.level_shapes(options["levels"], options["log2_table_size"], options["coarsest"], finest,
                                    not corners, options["finest_y"])
    return rows[-1] == (finest + corners) * (HashGrid.down(finest, finest, options["finest_y"]) + corners)


def test_hashgrid_sizing_holds_the_finest_level_whole_up_to_a_cap():
    """The table holds the finest level whole (its smallest such size) where that takes at most
    2**23 rows; beyond, the largest table that keeps the parameters within the pixel count."""
    for width, height, mode in ((200, 200, "binary"), (300, 200, "rgb"), (640, 480, "rgb"), (2048, 2048, "rgb"),
                                (1024, 600, "rgb"), (2049, 2048, "rgb"), (2560, 1700, "gray")):
        options = PRESETS["hashgrid"].resolve({}, width, height, mode)
        assert options["finest"] == (width if options["finest_y"] else max(width, height)) and options["detail"] == 0
        assert finest_level_is_whole(options)
        smaller = {**options, "log2_table_size": options["log2_table_size"] - 1}
        assert not finest_level_is_whole(smaller)
    assert WHOLE_FINEST_LOG2 == 23
    for width, height in ((4097, 4096), (5000, 4000), (10000, 10000)):  # past the cap: the budget's table
        options = PRESETS["hashgrid"].resolve({"interpolation": "linear"}, width, height, "rgb")  # the pyramid
        model = PRESETS["hashgrid"].build(3, options, np.random.default_rng(0))
        assert model.num_parameters <= width * height and not finest_level_is_whole(options)
        if options["log2_table_size"] < LOG2_TABLE_SIZES[-1]:
            bigger = {**options, "log2_table_size": options["log2_table_size"] + 1}
            assert PRESETS["hashgrid"].build(3, bigger, np.random.default_rng(0)).num_parameters > width * height
    assert PRESETS["hashgrid"].resolve({}, 32, 32, "rgb")["log2_table_size"] == 11  # 33x33 corners, whole


@pytest.mark.parametrize("width, height", [(256, 256), (200, 200), (256, 170), (128, 256)])
def test_a_colour_thumbnail_gets_a_coarse_pyramid_and_a_detail_level_within_the_budget(width, height):
    preset = PRESETS["hashgrid"]
    options = preset.resolve({}, width, height, "rgb")
    assert options["levels"] == 2 and options["coarsest"] == 16 and options["finest"] == max(width, height) // 4
    assert options["detail"] >= 7 / 8 * min(width, height)
    grid = preset.build(3, options, np.random.default_rng(0)).layers[0]
    assert not any(grid.hashed) and not any(grid.detail_grid.hashed)  # dense: no collisions
    assert grid.out_features == 5
    assert preset.build(3, options, np.random.default_rng(0)).num_parameters <= width * height
    # The largest detail level: one more vertex a side would break the budget.
    bigger = {**options, "detail": options["detail"] + 1}
    assert preset.build(3, bigger, np.random.default_rng(0)).num_parameters > width * height
    # Given levels or a detail of 0, the picture gets the hashed pyramid.
    for given in ({"levels": 4}, {"detail": 0}):
        assert preset.resolve(given, width, height, "rgb")["detail"] == 0


@pytest.mark.parametrize("mode, width, height, vertices", [
    ("gray", 256, 256, "centres"), ("gray", 200, 120, "centres"), ("gray", 257, 100, "centres"),
    ("gray", 1024, 600, "centres"), ("gray", 5000, 3400, "centres"), ("binary", 5000, 3400, "centres"),
    ("binary", 200, 200, "centres"), ("rgb", 256, 256, "corners")])
def test_hashgrid_vertices_sit_on_centres_for_gray_thumbnails(mode, width, height, vertices):
    options = PRESETS["hashgrid"].resolve({}, width, height, mode)
    assert options["vertices"] == vertices
    channels = 3 if mode == "rgb" else 1
    model = PRESETS["hashgrid"].build(channels, options, np.random.default_rng(0))
    assert model.layers[0].centred == (vertices == "centres")
    assert model.num_parameters <= width * height or finest_level_is_whole(options)
    assert PRESETS["hashgrid"].resolve({"vertices": "corners"}, width, height, mode)["vertices"] == "corners"
    # A pyramid asked of a drawing keeps its vertices on corners (binary drawings in short runs).
    if mode == "binary":
        assert PRESETS["hashgrid"].resolve({"levels": 4}, width, height, mode)["vertices"] == "corners"


def test_a_run_saved_before_the_vertices_option_resumes_on_corners():
    saved = {"model": "hashgrid", "model_options": {"width": 32}, "size": [8, 8]}
    for name in ("mode", "batch_size", "seed", "schedule", "filter"):
        saved[name] = None
    resumed = resume_options(FitOptions("p.png"), saved).model_options
    assert resumed["vertices"] == "corners" and resumed["interpolation"] == "linear" and resumed["detail"] == 0
    assert resumed["finest_y"] == 0


@pytest.mark.parametrize("width, height", [(256, 256), (240, 224), (128, 128)])
def test_a_gray_thumbnail_gets_one_dense_bspline_level_within_the_budget(width, height):
    preset = PRESETS["hashgrid"]
    options = preset.resolve({}, width, height, "gray")
    assert options["interpolation"] == "bspline" and options["levels"] == options["features"] == 1
    grid = preset.build(1, options, np.random.default_rng(0)).layers[0]
    assert grid.interpolation == "bspline" and grid.centred and not any(grid.hashed)  # dense: no collisions
    assert preset.build(1, options, np.random.default_rng(0)).num_parameters <= width * height
    # The largest such level: one more vertex a side would break the budget.
    bigger = {**options, "finest": options["finest"] + 1, "coarsest": options["finest"] + 1}
    assert preset.build(1, bigger, np.random.default_rng(0)).num_parameters > width * height
    assert options["finest"] >= 7 / 8 * max(width, height)


@pytest.mark.parametrize("mode, width, height, given, expected", [
    ("rgb", 256, 256, {}, "centres"),  # the detail level: the pixels pin every vertex
    ("rgb", 256, 256, {"filter": "bicubic"}, "bicubic"),
    ("rgb", 512, 512, {}, "centres"),  # a vertex per pixel, read by a spline: the pixels pin it too
    ("rgb", 4097, 4096, {}, "centres"),  # past 2^24 pixels the level has fewer vertices, and the pixels pin it still
    ("rgb", 512, 512, {"model_options": {"levels": 4}}, "lanczos"),
    ("gray", 512, 512, {}, "centres"), ("gray", 256, 256, {}, "lanczos"),
    ("binary", 200, 200, {}, "spline"), ("binary", 256, 100, {}, "spline"),  # a drawing learns the spline between
    ("binary", 5000, 3400, {}, "centres"), ("binary", 257, 100, {}, "centres"),  # a larger one: tiles, as a photograph
    ("binary", 200, 200, {"model_options": {"levels": 4}}, "lanczos")])
def test_only_a_level_the_pixels_pin_trains_on_pixel_centres_by_default(mode, width, height, given, expected):
    channels = 3 if mode == "rgb" else 1
    plan = make_plan(FitOptions("p.png", steps=10, **given), picture(width, height, channels, mode))
    assert plan.filter == expected


@pytest.mark.parametrize("width, height, mode", [(257, 257, "rgb"), (512, 512, "rgb"), (724, 724, "rgb"),
                                                (512, 512, "gray"), (384, 256, "rgb"), (256, 384, "rgb"),
                                                (768, 512, "gray"), (1000, 180, "rgb"), (1024, 1024, "rgb"),
                                                (2048, 2048, "rgb"), (2560, 1600, "gray"), (8192, 2048, "rgb")])
def test_a_photograph_past_a_batch_gets_a_spline_level_of_a_vertex_per_pixel(width, height, mode):
    """Up to 2^24 pixels; past it, see the next test."""
    preset = PRESETS["hashgrid"]
    options = preset.resolve({}, width, height, mode)
    # A feature per channel, read out by a linear head and a sigmoid: the table starts as the picture's logits.
    assert options["levels"] == 1 and options["features"] == {"rgb": 3, "gray": 1}[mode] and options["depth"] == 0
    assert options["interpolation"] == "bspline"
    assert options["coarsest"] == options["finest"] == width and options["vertices"] == "centres"
    assert options["finest_y"] == (0 if width == height else height)  # 0: as many as across
    grid = preset.build(3 if mode == "rgb" else 1, options, np.random.default_rng(0)).layers[0]
    # Dense, a vertex per pixel along both axes.
    assert not any(grid.hashed) and (grid.sides, grid.sides_y) == ([width], [height])
    assert preset.resolve({"features": 4}, width, height, mode)["features"] == 4  # given options are kept


@pytest.mark.parametrize("width, height, mode, sides", [
    (4097, 4096, "rgb", (4096, 4095)), (8192, 6144, "rgb", (4729, 3547)), (10000, 10000, "gray", (4096, 4096)),
    (8192, 2049, "rgb", (8190, 2048)), (100000, 1000, "rgb", (40960, 409))])
def test_past_2_to_the_24_pixels_the_spline_level_keeps_2_to_the_24_vertices_in_proportion(width, height, mode, sides):
    """The pyramid drew these in 60 s at 25 dB (50 MP) and 24.7 dB (100 MP): a fit's samples reach
    half its pixels.  The level, started as the picture resized to it, draws them at 34.3 and 31.2."""
    options = PRESETS["hashgrid"].resolve({}, width, height, mode)
    assert (options["finest"], options["finest_y"] or options["finest"]) == sides
    assert options["levels"] == 1 and options["interpolation"] == "bspline" and options["log2_table_size"] == 24
    assert sides[0] * sides[1] <= 1 << 24 and abs(sides[0] / sides[1] - width / height) < 0.01 * width / height


def test_the_spline_level_of_a_picture_of_any_shape_stays_within_2_to_the_24_vertices():
    from ironlearn.fitting.regimes import spline_sides

    for width, height in ((10**8, 1), (4, 25 * 10**6), (100000, 1000), (4096, 4096), (300, 200)):
        across, down = spline_sides(width, height)
        assert 1 <= across <= width and 1 <= down <= height and across * down <= 1 << 24
    assert spline_sides(10**8, 1) == (1 << 24, 1)  # the long side gives way, at once


@pytest.mark.parametrize("mode, width, height, given", [
    ("binary", 5000, 3400, {"levels": 4}), ("rgb", 8192, 2049, {"levels": 4}), ("rgb", 512, 512, {"interpolation": "linear"}),
    ("rgb", 384, 256, {"finest_y": 300}), ("rgb", 256, 120, {}), ("rgb", 128, 128, {}), ("binary", 200, 200, {"finest": 100}),
    ("gray", 5000, 3400, {"interpolation": "linear"}), ("gray", 64, 64, {}), ("gray", 200, 150, {}),
    ("gray", 256, 256, {"levels": 4}), ("gray", 256, 256, {"interpolation": "linear"})])
def test_other_pictures_keep_the_bilinear_pyramid(mode, width, height, given):
    options = PRESETS["hashgrid"].resolve(given, width, height, mode)
    assert options["interpolation"] == "linear" and options["levels"] > 1 and options["detail"] == 0


def test_hashgrid_sizing_keeps_what_the_user_gave():
    given = {"width": 32, "depth": 2, "levels": 3, "features": 4, "log2_table_size": 10, "coarsest": 8,
             "finest": 64, "finest_y": 0, "vertices": "corners", "interpolation": "bspline", "detail": 0}
    assert hashgrid_size(500, 500, "gray", given) == given
    assert hashgrid_size(256, 256, "gray", {**given, "interpolation": "linear"})["interpolation"] == "linear"
    levels = HashGrid.level_shapes(3, 10, 8, 64)[0]
    assert levels[0] == 8 and levels[-1] == 64


@pytest.mark.parametrize("given, side", [({"levels": 1}, 300), ({"levels": 1, "finest": 64}, 64),
                                          ({"levels": 1, "coarsest": 40, "finest": 64}, 40)])
def test_a_single_level_is_the_finest_unless_coarsest_is_given(given, side):
    options = PRESETS["hashgrid"].resolve(given, 300, 200, "rgb")
    assert options["levels"] == 1 and options["coarsest"] == side
    assert HashGrid.level_shapes(1, 14, options["coarsest"], options["finest"])[0] == [side]


def test_options_a_preset_does_not_take_are_refused():
    from ironlearn.fitting.options import flag

    with pytest.raises(UsageError, match="^w0 does not apply to model hashgrid") as caught:
        make_plan(FitOptions("p.png", model_options={"w0": 3.0}), picture())
    assert caught.value.worded(flag).startswith("--w0 does not apply to --model hashgrid (it takes: --width, ")


def test_validate_names_each_option_by_its_python_name_and_the_command_by_its_flag():
    from ironlearn.fitting.options import flag

    for options, python, command in (
            (FitOptions("p", model_options={"log2_table_size": 40}), "log2_table_size must lie in 6..24",
             "--table-log2 must lie in 6..24"),
            (FitOptions("p", steps=0), "steps must be at least 1", "--steps must be at least 1"),
            (FitOptions("p", model_options={"width": 10**5}), "width 100000 is beyond what makes sense",
             "--width 100000 is beyond"),
            (FitOptions("p", model_options={"detail": -1}), "detail must be at least 0", "--detail must be at least 0"),
            (FitOptions("p", model_options={"width": 0}), "width must be at least 1", "--width must be at least 1")):
        with pytest.raises(UsageError) as refused:
            validate(options)
        assert str(refused.value).startswith(python) and refused.value.worded(flag).startswith(command)
    with pytest.raises(UsageError, match="contradict"):
        validate(FitOptions("p", resume=True, force=True))
    validate(FitOptions("p", model_options={"detail": 0}))  # 0: no detail level


# -- the resume merge ----------------------------------------------------------------------------
def test_resume_takes_unset_settings_from_the_run():
    pic = picture()
    saved = saved_settings(pic, lr=0.006)  # a run that had to lower its rate
    merged = resume_options(FitOptions("p.png", out="run", resume=True), saved)
    assert merged.lr == 0.006 and merged.batch_size == 300 and merged.seed == 0 and merged.size == (64, 48)
    assert merged.model_options == saved["model_options"]
    plan = make_plan(merged, pic, saved, start_step=40)
    assert plan.steps == 100 and plan.start_step == 40 and plan.prior_seconds == 12.5 and plan.lr == 0.006


def test_resume_refuses_settings_that_differ_and_names_them():
    pic = picture()
    saved = saved_settings(pic)
    with pytest.raises(UsageError, match=r"^cannot resume with different settings: model siren \(the run used "
                                         r"hashgrid\).*; levels 7 .*use force=True") as refused:
        resume_options(FitOptions("p.png", model="siren", model_options={"levels": 7, "log2_table_size": 7}), saved)
    assert re.search(r": --model siren \(the run used hashgrid\).*--levels 7 .*--table-log2 7 .*use --force",
                     refused.value.worded(flag))  # as the command words it
    with pytest.raises(UsageError, match="not the image"):
        make_plan(resume_options(FitOptions("q.png", resume=True), saved), picture(channels=3, mode="rgb"), saved)


TIMED = {"timed": True, "time_budget": 30.0}  # a run given --time-budget 30 alone, saved at step 100 after 12.5 s


@pytest.mark.parametrize("saved_as, given, steps, budget, timed", [
    (TIMED, {}, 100, 30.0, True),                                  # a bare --resume goes on as the run was
    (TIMED, {"time_budget": 30.0}, 100, 30.0, True),               # ... as does the same budget again
    (TIMED, {"steps": 500}, 500, None, False),                     # new --steps: to them, the budget dropped
    (TIMED, {"time_budget": 60.0}, None, 60.0, False),             # a new budget: its rest planned afresh
    ({}, {"time_budget": 30.0}, None, 30.0, False),                # a budget on a run of --steps
    ({}, {"steps": 300, "time_budget": 60.0}, 300, 60.0, False),  # both: whichever comes first
])
def test_a_resume_trains_for_what_was_asked_last(saved_as, given, steps, budget, timed):
    pic = picture()
    saved = saved_settings(pic, **saved_as)
    options = resume_options(FitOptions("p.png", resume=True, **given), saved)
    plan = make_plan(options, pic, saved, start_step=100)
    assert (plan.steps, plan.time_budget, plan.timed) == (steps, budget, timed)
    if steps is None:  # planned once the pace is measured: from step 100, for what is left of the budget
        assert plan.calibrated(0.01).steps == 100 + round((budget - 12.5) / 0.01)
        assert plan.calibrated(0.01).timed


def test_a_replan_never_raises_the_learning_rate_that_is_on_course():
    """The pace changes each time the plan is revised, the planned total jumping up and down; past
    the warm-up the rate only ever goes down (a plan far too short is another test's: test_pace),
    and it still ends at lr_min with the budget."""
    plan = make_plan(FitOptions("p.png", time_budget=10), picture()).calibrated(0.01)  # 1000 steps
    rates, seconds = [], 0.0
    paces = np.random.default_rng(0).choice([0.002, 0.005, 0.01, 0.03], size=10_000)
    for step in range(10_000):
        if step % 25 == 0 and step:
            plan = plan.replanned(step, seconds, paces[step - 25:step].mean())
        rates.append(plan.make_schedule()(step))
        seconds += paces[step]
        if seconds >= plan.time_budget:
            break
    warmup = int(np.argmax(rates))
    assert warmup <= 100 and rates[warmup] == pytest.approx(plan.lr)
    assert all(later <= earlier * (1 + 1e-12) for earlier, later in zip(rates[warmup:], rates[warmup + 1:]))
    assert plan.anneal_from is not None and rates[-1] < plan.lr / 10
    after = make_plan(resume_options(FitOptions("p.png", resume=True), plan.settings(device="cpu", train_seconds=5)),
                      picture(), plan.settings(device="cpu", train_seconds=5), start_step=step)
    assert after.make_schedule()(step) == pytest.approx(plan.make_schedule()(step))  # a resume goes on alike
    gentler = plan.gentler()  # a retry after divergence lowers the rate it goes on from too
    assert gentler.make_schedule()(step) == pytest.approx(plan.make_schedule()(step) * RETRY_LR_FACTOR)


@pytest.mark.parametrize("options,start,seconds,left", [
    (FitOptions("p.png"), 100, 0.0, False),                       # finished run: nothing left
    (FitOptions("p.png", steps=80), 100, 0.0, False),             # asked for fewer steps than done
    (FitOptions("p.png", time_budget=10.0), 50, 12.0, False),     # its time budget is spent
    (FitOptions("p.png", steps=150), 100, 0.0, True),
    (FitOptions("p.png", time_budget=20.0), 50, 12.0, True),
])
def test_a_resumed_run_knows_when_nothing_is_left(options, start, seconds, left):
    pic = picture()
    saved = saved_settings(pic, train_seconds=seconds)
    plan = make_plan(resume_options(dataclasses.replace(options, resume=True), saved), pic, saved, start_step=start)
    assert plan.nothing_left is not left


def test_fingerprint_follows_the_pixels():
    a, b = picture(), picture()
    assert fingerprint(a) == fingerprint(b)
    b.values[0, 0, 0] += 0.5
    assert fingerprint(a) != fingerprint(b)


@pytest.mark.parametrize("mode, channels, given, between, weight", [
    ("gray", 1, {}, 1 / 16, 0.2), ("rgb", 3, {}, 1 / 16, 1 / 9),
    ("binary", 1, {}, 1 / 2, 1 / 2),  # a drawing's spline filter: SPLINE_BETWEEN
    ("binary", 1, {"model_options": {"levels": 4}}, 1 / 32, None)])  # a pyramid asked of it: BETWEEN's
def test_a_small_picture_trains_whole_with_its_mode_s_samples_between_pixels(mode, channels, given, between, weight):
    from ironlearn.backend import Backend
    from ironlearn.fitting.run import training_data
    from ironlearn.image.sampling import EveryPixel

    pic = picture(64, 48, channels, mode)
    source = training_data(make_plan(FitOptions("p.png", steps=10, **given), pic), pic, Backend("cpu"))["batches"]
    assert isinstance(source, EveryPixel) and source.between.batch_size == round(64 * 48 * between)
    by_count = source.between.batch_size / (64 * 48 + source.between.batch_size)
    assert source.weight == pytest.approx(by_count if weight is None else weight)


def test_a_peak_of_ones_own_ends_at_a_hundredth_of_it_as_the_presets_do():
    """--lr 0.5 used to keep the preset's floor (2e-4: a 2,500th of the peak), not its ratio."""
    plan = make_plan(FitOptions("p.png", steps=10, lr=0.5), picture(32, 32))
    assert plan.lr_min == pytest.approx(0.005)
    assert make_plan(FitOptions("p.png", steps=10), picture(32, 32)).lr_min == PRESETS["hashgrid"].lr_min
    assert make_plan(FitOptions("p.png", steps=10, lr=0.5, lr_min=0.1), picture(32, 32)).lr_min == 0.1


def test_a_drawing_starts_random_so_that_its_time_lapse_shows_it_learning():
    drawing = picture(200, 200, 1, "binary")
    plan = make_plan(FitOptions("p.png", steps=10), drawing)
    assert plan.regime is PIXEL_SPLINE and plan.start == "random" and not plan.starts_as_picture
    # Asked, it starts as the picture; a photograph's default is the picture, and so is a drawing's
    # past 256 px (trained a tile a step: from random it learned too slowly).
    assert make_plan(FitOptions("p.png", steps=10, start="picture"), drawing).starts_as_picture
    assert make_plan(FitOptions("p.png", steps=10), picture(300, 300, 1, "gray")).starts_as_picture
    large = make_plan(FitOptions("p.png", steps=10), picture(300, 300, 1, "binary"))
    assert large.starts_as_picture and large.trains_tiles and large.filter == "centres"
    # Other presets start random, drawings or not.
    assert not make_plan(FitOptions("p.png", steps=10, model="siren"), drawing).starts_as_picture
