# What CI runs, one target a step; `make check` runs the checks of a change locally (in the
# environment you installed with `python3 -m pip install -e ".[dev]"`), `make ci` runs CI
# itself (.ci/run: a new virtual environment, then these targets).
PYTHON ?= python3
SLOW_SUBSET = tests/test_demo.py tests/learning/test_train.py tests/test_notebooks.py \
	tests/learning/test_experiments_privacy.py \
	tests/econ/test_privacy_effectiveness.py::test_notebook_replica_all_columns \
	tests/learning/test_train_cli.py::test_sweep_on_ray_gives_the_serial_numbers \
	tests/learning/test_train_cli.py::test_train_with_dp_sgd_reports_each_clients_epsilon \
	tests/learning/test_cobo_cli.py::test_code_momentum_reaches_every_method_but_fc \
	tests/learning/test_cobo_cli.py::test_reproduce_reports_both_settings_with_every_claim \
	tests/learning/test_cobo_cli.py::test_reduced_cross_silo_run_has_the_promised_shape \
	tests/learning/test_federated_clustering.py::test_fc_matches_the_oracle_at_4x16_reduced \
	tests/learning/test_cobo.py::test_time_decaying_sampling_lowers_the_late_weight_noise \
	tests/learning/test_flower_compose.py::test_the_example_app_under_the_mediator_in_flowers_simulation \
	tests/learning/test_dp_accounting.py \
	tests/learning/test_defection_free_n_driver.py::test_four_firms_on_mnist5k_lose_no_revenue_and_reach_the_bargain \
	tests/learning/test_flower_mechanisms.py::test_n_firms_deployed_on_separate_processes_give_the_in_process_run

.PHONY: check lint types test extras plugin slow ci

check: lint types test

lint:
	ruff check .
	ruff format --check .

types:
	$(PYTHON) -m mypy econ games learning collabecon

test:
	PYTEST_ADDOPTS="$(PYTEST_ADDOPTS) --durations=20" $(PYTHON) -m pytest

extras:
	$(PYTHON) -m pip install -q -e ".[flower,ray]"
	$(PYTHON) -m pip check
	$(PYTHON) -m pytest -m "(flower or ray) and not slow" --durations=10

# The toy plugin of tests/plugins/ installed by pip as a user installs one, its test run
# (a failure, not a skip, if the install did not take), then uninstalled again so that the
# other steps see only collabecon's own registries.
plugin:
	$(PYTHON) -m pip install -q ./tests/plugins/collabecon_toy_plugin
	COLLABECON_PLUGIN_INSTALLED=1 $(PYTHON) -m pytest tests/test_plugins.py -k pip_installed; \
	status=$$?; $(PYTHON) -m pip uninstall -y -q collabecon-toy-plugin; \
	rm -rf tests/plugins/collabecon_toy_plugin/build tests/plugins/collabecon_toy_plugin/*.egg-info; \
	exit $$status

slow:
	$(PYTHON) -m pytest -m slow $(SLOW_SUBSET) --durations=10
	HYPOTHESIS_PROFILE=thorough $(PYTHON) -m pytest tests/test_properties.py

ci:
	bash .ci/run
