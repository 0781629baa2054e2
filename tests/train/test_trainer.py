import numpy as np
import pytest

from ironlearn.backend import Backend
from ironlearn.nn import hashgrid, mse, siren
from ironlearn.optim import SGD, Adam, constant, cosine
from ironlearn.train import Callback, Checkpointer, DivergenceError, History, Trainer, load_checkpoint


def toy_problem(backend, n=64):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (n, 2))
    y = np.sin(3 * x[:, :1]) * x[:, 1:]
    return backend.asarray(x), backend.asarray(y)


MODELS = {
    "siren": lambda rng: siren(2, 1, width=16, depth=2, rng=rng),
    # A colour thumbnail's layout: a coarse pyramid and a detail level (a second table to resume).
    "hashgrid-detail": lambda rng: hashgrid(2, 1, levels=2, features=2, log2_table_size=8, coarsest=4, finest=8,
                                            width=16, depth=1, detail=12, rng=rng),
}


def make_trainer(backend, batch_size=None, callbacks=(), lr=None, model="siren"):
    model = MODELS[model](np.random.default_rng(0)).to(backend)
    opt = Adam(model.named_parameters(), lr=lr or cosine(1e-3, 1e-5, 60))
    x, y = toy_problem(backend)
    return Trainer(model, opt, mse, x, y, batch_size=batch_size, seed=5, callbacks=callbacks)


@pytest.mark.parametrize("batch_size, model", [(None, "siren"), (20, "siren"), (20, "hashgrid-detail")])
def test_resume_is_bit_identical(backend, tmp_path, batch_size, model):
    straight = make_trainer(backend, batch_size, model=model).run(60)
    path = tmp_path / "ckpt.npz"
    first = make_trainer(backend, batch_size, [Checkpointer(path, every=0)], model=model).run(25)
    assert first.step == 25

    ckpt = load_checkpoint(path)
    assert ckpt.step == 25 and ckpt.meta["seed"] == 5
    network = ckpt.model.to(backend)
    x, y = toy_problem(backend)
    resumed = Trainer(network, ckpt.optimizer(network.named_parameters()), mse, x, y,
                      batch_size=batch_size, seed=ckpt.meta["seed"]).run(60)
    assert resumed.step == 60
    for name, value in straight.model.named_parameters().items():
        got, want = backend.to_host(resumed.model.named_parameters()[name]), backend.to_host(value)
        if backend.device == "cuda" and model.startswith("hashgrid"):
            # On a GPU the hash grid's gradient is summed with atomic adds, in an order that varies
            # from run to run, so even two straight runs differ in float32's last bits (an H200:
            # 20 of 212 table entries, at most 4.4e-7 relative, after 60 steps).  Resume is
            # bit-identical on the CPU; on a GPU it matches to within that rounding.
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


def test_time_budget_stops_training(backend):
    trainer = make_trainer(backend).run(time_budget=0.05)
    assert trainer.step > 0 and trainer.train_seconds < 1.0


@pytest.mark.parametrize("counted", [False, True])
def test_a_time_budget_counts_the_callbacks_when_asked(backend, counted):
    """ironlearn fit counts its checkpoints and frames in the budget, so the budget is wall time."""
    import time

    class Slow(Callback):
        def step(self, trainer):
            time.sleep(0.02)

    trainer = make_trainer(backend, callbacks=[Slow(1)])
    trainer.count_callbacks = counted
    trainer.run(steps=30, time_budget=0.2)  # 30 steps sleep 0.6 s
    if counted:  # each step slept 20 ms, all of it inside the budget
        assert trainer.step <= 11 and 0.2 <= trainer.train_seconds < 0.4
    else:  # the sleeps are not training time: the budget is not reached
        assert trainer.step == 30 and trainer.train_seconds < 0.02 * trainer.step


def test_callbacks_run_on_their_interval_and_at_the_end(backend):
    history = History(every=10)
    trainer = make_trainer(backend, callbacks=[history]).run(35)
    assert [row["step"] for row in history.rows] == [10, 20, 30, 35]
    assert history.rows[-1]["loss"] < history.rows[0]["loss"]
    assert trainer.last_lr == pytest.approx(cosine(1e-3, 1e-5, 60)(34))  # step 35 ran at schedule(34)
    assert trainer.optimizer.next_lr == pytest.approx(cosine(1e-3, 1e-5, 60)(35))


def test_loss_is_read_back_only_when_asked(backend, monkeypatch):
    reads = []

    class Spy(Callback):
        def step(self, trainer):
            reads.append(trainer.loss)

    trainer = make_trainer(backend, callbacks=[Spy(every=20)])
    trainer.check_every = 0
    original = Trainer.loss.fget
    counted = []
    monkeypatch.setattr(Trainer, "loss", property(lambda self: counted.append(1) or original(self)))
    trainer.run(40)
    assert len(reads) == 2 and len(counted) == 3  # two callbacks and the final NaN check


def test_divergence_names_the_step_and_keeps_the_last_good_checkpoint(backend, tmp_path):
    path = tmp_path / "ckpt.npz"
    model = siren(2, 1, width=16, depth=2, rng=np.random.default_rng(0)).to(backend)
    x, y = toy_problem(backend)
    trainer = Trainer(model, SGD(model.named_parameters(), lr=1e-3), mse, x, y, check_every=1,
                      callbacks=[Checkpointer(path, every=5)])
    trainer.run(10)
    good = load_checkpoint(path)
    assert good.step == 10
    trainer.optimizer.schedule = constant(1e6)  # a learning rate far too high
    with pytest.raises(DivergenceError, match=r"diverged at step 1\d.*lower learning rate"):
        trainer.run(40)
    kept = load_checkpoint(path)
    assert kept.step == 10
    for name, value in good.model.named_parameters().items():
        np.testing.assert_array_equal(kept.model.named_parameters()[name], value)


@pytest.mark.parametrize("max_share, saves", [(None, list(range(1, 41))), (0.1, [1, 11, 21, 31, 40])])
def test_slow_saves_are_put_off_to_keep_their_share_of_the_time(tmp_path, monkeypatch, max_share, saves):
    from ironlearn.train import callbacks

    # A clock a second later at each reading: every step and every save takes 1 s.
    clock = iter(range(10**6))
    monkeypatch.setattr(callbacks.time, "perf_counter", lambda: float(next(clock)))
    steps_at = []
    checkpointer = Checkpointer(tmp_path / "ckpt.npz", trigger=lambda trainer: True, max_share=max_share,
                                then=[lambda trainer: steps_at.append(trainer.step)])
    make_trainer(Backend("cpu"), callbacks=[checkpointer]).run(40)
    # With a share of 0.1, a save of 1 s waits for 10 s of training after it began; the end saves.
    assert steps_at == saves
    assert load_checkpoint(tmp_path / "ckpt.npz").step == 40


def test_request_stop_finishes_the_step_and_saves(backend, tmp_path):
    path = tmp_path / "ckpt.npz"

    class StopAt(Callback):
        def step(self, trainer):
            if trainer.step == 7:
                trainer.request_stop()

    trainer = make_trainer(backend, callbacks=[StopAt(every=1), Checkpointer(path, every=0)]).run(100)
    assert trainer.step == 7 and load_checkpoint(path).step == 7


def test_argument_checks(backend):
    x, y = toy_problem(backend)
    model = siren(2, 1, width=4, depth=1, rng=np.random.default_rng(0)).to(backend)
    with pytest.raises(ValueError, match="differ in length"):
        Trainer(model, Adam(model.named_parameters()), mse, x, y[:3])
    with pytest.raises(ValueError, match="batch_size"):
        Trainer(model, Adam(model.named_parameters()), mse, x, y, batch_size=0)
    with pytest.raises(ValueError, match="steps, time_budget"):
        Trainer(model, Adam(model.named_parameters()), mse, x, y).run()


def test_divergence_message_speaks_library_terms():
    error = DivergenceError(12, float("nan"), 0.02)
    assert str(error) == ("training diverged at step 12: loss nan at learning rate 0.02; "
                          "give the optimizer a lower learning rate (e.g. 0.002)")
    assert (error.step, error.lr) == (12, 0.02) and error.loss != error.loss  # the CLI words its own advice


class CountingBackend(Backend):
    """Counts every call that could copy between host and device, crossing or not: on the CPU
    nothing crosses, so the calls are what shows which code would copy on a GPU."""

    def __init__(self, device):
        super().__init__(device)
        self.calls = 0

    def asarray(self, array, dtype=None):
        self.calls += 1
        return super().asarray(array, dtype)

    def to_host(self, array):
        self.calls += 1
        return super().to_host(array)


@pytest.mark.parametrize("batch_size", [None, 16])
def test_a_training_step_makes_no_transfers(backend, batch_size):
    spy = CountingBackend(backend.device)
    model = siren(2, 1, width=16, depth=2, rng=np.random.default_rng(0)).to(spy)
    x, y = toy_problem(spy)  # 64 points: four mini-batches an epoch
    trainer = Trainer(model, Adam(model.named_parameters()), mse, x, y, batch_size=batch_size, backend=spy)
    copies = []
    for _ in range(8):
        before = spy.calls, spy.transfers
        trainer.train_step()
        copies.append((spy.calls - before[0], spy.transfers - before[1]))
    if batch_size is None:
        assert copies == [(0, 0)] * 8
    else:  # each epoch's first step copies that epoch's batch order to the device, once
        epoch_start = (1, 1 if backend.device == "cuda" else 0)
        assert copies == [epoch_start, (0, 0), (0, 0), (0, 0)] * 2


def test_a_batch_of_weighted_terms_steps_on_their_weighted_sum(backend):
    """Two terms, one per forward/backward pass, move the model exactly as their weighted sum
    of gradients would (a hash grid's sparse rows from the second included)."""
    from ironlearn.nn import hashgrid
    from ironlearn.optim import SGD

    rng = np.random.default_rng(1)
    x1, y1 = (backend.asarray(a) for a in (rng.uniform(-1, 1, (400, 2)), rng.uniform(size=(400, 1))))
    x2, y2 = (backend.asarray(a) for a in (rng.uniform(-1, 1, (7, 2)), rng.uniform(size=(7, 1))))

    def model():
        return hashgrid(2, 1, levels=2, log2_table_size=8, coarsest=4, finest=32, width=8, depth=1,
                        rng=np.random.default_rng(0)).to(backend)

    terms = model()
    trainer = Trainer(terms, SGD(terms.named_parameters(), lr=0.5), mse, backend=backend,
                      batches=lambda step: [(x1, y1, 0.7), (x2, y2, 0.3)]).run(1)
    assert trainer.loss == pytest.approx(float(mse(model()(x1), y1)[0]), rel=1e-6)  # the first term's

    by_hand = model()
    sums = {}
    for x, y, weight in ((x1, y1, 0.7), (x2, y2, 0.3)):
        _, grad = mse(by_hand.forward(x), y)
        by_hand.backward(grad * weight)
        for name, g in by_hand.named_gradients().items():
            dense = g.dense() if hasattr(g, "dense") else g
            sums[name] = sums.get(name, 0) + backend.to_host(dense)
    # The sparse path ran: a RowGrad of the rows read (a MaskedGrad of them on a GPU).
    assert any(hasattr(g, "rows") or hasattr(g, "touched") for g in by_hand.named_gradients().values())
    for name, value in model().named_parameters().items():
        np.testing.assert_allclose(backend.to_host(terms.named_parameters()[name]),
                                   backend.to_host(value) - 0.5 * sums[name], rtol=1e-5, atol=1e-7, err_msg=name)
