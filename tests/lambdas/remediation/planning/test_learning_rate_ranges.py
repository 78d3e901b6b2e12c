"""An optimizer's learning-rate range (lambdas.remediation.planning.learning_rate_ranges), and the same range on a
loss whose targets are many times the outputs' scale."""

from lambdas.remediation.planning.learning_rate_ranges import RateRange, range_for


def test_an_optimizers_range_follows_its_usual_rate_by_the_sgd_ratios():
    adam = range_for("Adam")
    assert (adam.usual, adam.ceiling, adam.too_small, adam.floor) == (1e-3, 4e-3, 1e-5, 1e-6)
    assert range_for(None).optimizer == "SGD" and range_for(None).source == "assumed"
    assert range_for("Lion", 3e-4) == RateRange("Lion", 3e-4, source="from the start")


def test_a_range_divided_by_the_targets_scale_moves_every_bound_and_says_so():
    scaled = range_for("SGD").divided_by_target_scale(1000 / 1.2)
    assert scaled.target_scale == 833.333
    assert (scaled.usual, scaled.ceiling, scaled.too_small, scaled.floor) == (0.00012, 0.00048, 1.2e-06, 1.2e-07)
    assert scaled.describe() == (
        "SGD's range, divided by the targets' scale 833.3 (usual start 0.00012, out of range above 0.00048, too small "
        "below 1.2e-06; the optimizer the job reported)"
    )
