//! The rows of the transition table, in the order of the docs: one per rule, each also a test
//! named for its rule.

use super::{Row, check};

transitions! {
    // §5: created, running, and who decides success, kind by kind.
    new_job_is_created_with_every_pod_and_service {
        spec: "§3, §5",
        job: "TFJob PS=1 Worker=2",
        before: "new",
        observed: "nothing",
        plan: "Created: TFJobCreated \"TFJob mnist is created.\"; create pods ps-0, worker-0, worker-1; create services ps-0, worker-0, worker-1; count created",
    }
    pending_pods_keep_the_job_created {
        spec: "§5",
        job: "TFJob Chief=1 Worker=2",
        before: "Created",
        observed: "all Pending",
        plan: "status unchanged",
    }
    chief_running_sets_running {
        spec: "§5",
        job: "TFJob Chief=1 Worker=2",
        before: "Created",
        observed: "all Running",
        plan: "Created, Running: TFJobRunning \"TFJob ml/mnist is running.\"",
    }
    steady_running_job_plans_nothing {
        spec: "§5",
        job: "TFJob Chief=1 Worker=2",
        before: "Running",
        observed: "all Running",
        plan: "status unchanged",
    }
    chief_success_decides_job {
        spec: "§5",
        job: "TFJob Chief=1 Worker=2",
        before: "Running",
        observed: "all Running; chief-0 Succeeded exit=0",
        plan: "Created, Running=False, Succeeded: TFJobSucceeded \"TFJob ml/mnist successfully completed.\"; events Normal ExitedWithCode, Normal TFJobSucceeded; count succeeded",
    }
    tf_master_success_decides_job {
        spec: "§5",
        job: "TFJob Master=1 Worker=2",
        before: "Running",
        observed: "all Running; master-0 Succeeded",
        plan: "Created, Running=False, Succeeded: TFJobSucceeded \"TFJob ml/mnist successfully completed.\"; events Normal TFJobSucceeded; count succeeded",
    }
    tf_worker_zero_decides_without_chief {
        spec: "§5",
        job: "TFJob PS=1 Worker=2",
        before: "Running",
        observed: "all Running; worker-0 Succeeded exit=0",
        plan: "Created, Running=False, Succeeded: TFJobSucceeded \"TFJob ml/mnist successfully completed.\"; events Normal ExitedWithCode, Normal TFJobSucceeded; count succeeded",
    }
    tf_other_worker_success_does_not_decide {
        spec: "§5",
        job: "TFJob PS=1 Worker=2",
        before: "Running",
        observed: "all Running; worker-1 Succeeded exit=0",
        plan: "status unchanged; events Normal ExitedWithCode",
    }
    tf_all_workers_policy_waits_for_every_worker {
        spec: "§5",
        job: "TFJob PS=1 Worker=2 successPolicy=AllWorkers",
        before: "Running",
        observed: "all Running; worker-0 Succeeded",
        plan: "status unchanged",
    }
    tf_all_workers_policy_succeeds_when_every_worker_succeeded {
        spec: "§5",
        job: "TFJob PS=1 Worker=2 successPolicy=AllWorkers",
        before: "Running",
        observed: "all Running; worker-0 Succeeded; worker-1 Succeeded",
        plan: "Created, Running=False, Succeeded: TFJobSucceeded \"TFJob ml/mnist successfully completed.\"; events Normal TFJobSucceeded; count succeeded",
    }
    tf_ps_and_evaluator_never_decide {
        spec: "§5",
        job: "TFJob PS=1 Worker=1 Evaluator=1",
        before: "Running",
        observed: "all Running; ps-0 Succeeded; evaluator-0 Succeeded",
        plan: "status unchanged",
    }
    pytorch_master_success_decides_job {
        spec: "§5",
        job: "PyTorchJob Master=1 Worker=2",
        before: "Running",
        observed: "all Running; master-0 Succeeded",
        plan: "Created, Running=False, Succeeded: PyTorchJobSucceeded \"PyTorchJob mnist is successfully completed.\"; events Normal PyTorchJobSucceeded; count succeeded",
    }
    pytorch_without_master_every_worker_decides {
        spec: "§5",
        job: "PyTorchJob Worker=2",
        before: "Running",
        observed: "all Running; worker-0 Succeeded",
        plan: "status unchanged",
    }
    pytorch_elastic_any_worker_decides {
        spec: "§5",
        job: "PyTorchJob Worker=2 elastic",
        before: "Running",
        observed: "all Running; worker-1 Succeeded",
        plan: "Created, Running=False, Succeeded: PyTorchJobSucceeded \"PyTorchJob ml/mnist successfully completed.\"; events Normal PyTorchJobSucceeded; count succeeded",
    }
    xgboost_master_success_decides_job {
        spec: "§5",
        job: "XGBoostJob Master=1 Worker=2",
        before: "Running",
        observed: "all Running; master-0 Succeeded",
        plan: "Created, Running=False, Succeeded: XGBoostJobSucceeded \"XGBoostJob mnist is successfully completed.\"; events Normal XGBoostJobSucceeded; count succeeded",
    }
    paddle_without_master_every_worker_decides {
        spec: "§5",
        job: "PaddleJob Worker=2",
        before: "Running",
        observed: "all Succeeded",
        plan: "Created, Running=False, Succeeded: PaddleJobSucceeded \"PaddleJob ml/mnist successfully completed.\"; events Normal PaddleJobSucceeded; count succeeded",
    }
    mxnet_scheduler_running_sets_running {
        spec: "§5",
        job: "MXJob jobMode=MXTrain Scheduler=1 Server=1 Worker=2",
        before: "Created",
        observed: "all Running",
        plan: "Created, Running: MXJobRunning \"MXJob mnist is running.\"",
    }
    mxnet_scheduler_success_decides_a_training_job {
        spec: "§5",
        job: "MXJob jobMode=MXTrain Scheduler=1 Server=1 Worker=2",
        before: "Running",
        observed: "all Running; scheduler-0 Succeeded",
        plan: "Created, Running=False, Succeeded: MXJobSucceeded \"MXJob mnist is successfully completed.\"; events Normal MXJobSucceeded; count succeeded",
    }
    mxnet_workers_do_not_decide_beside_a_scheduler {
        spec: "§5",
        job: "MXJob jobMode=MXTrain Scheduler=1 Server=1 Worker=2",
        before: "Running",
        observed: "all Running; worker-0 Succeeded; worker-1 Succeeded",
        plan: "status unchanged",
    }
    mxnet_without_scheduler_every_worker_decides {
        spec: "§5 [fix]",
        job: "MXJob jobMode=MXTrain Worker=2",
        before: "Running",
        observed: "all Succeeded",
        plan: "Created, Running=False, Succeeded: MXJobSucceeded \"MXJob mnist is successfully completed.\"; events Normal MXJobSucceeded; count succeeded",
    }
    mxnet_tuner_running_sets_running {
        spec: "§5 [fix]",
        job: "MXJob jobMode=MXTune TunerTracker=1 TunerServer=1 Tuner=1",
        before: "Created",
        observed: "all Running",
        plan: "Created, Running: MXJobRunning \"MXJob mnist is running.\"",
    }
    mxnet_tuner_success_decides_a_tuning_job {
        spec: "§5 [fix]",
        job: "MXJob jobMode=MXTune TunerTracker=1 TunerServer=1 Tuner=1",
        before: "Running",
        observed: "all Running; tuner-0 Succeeded exit=0",
        plan: "Created, Running=False, Succeeded: MXJobSucceeded \"MXJob mnist is successfully completed.\"; events Normal ExitedWithCode, Normal MXJobSucceeded; count succeeded",
    }
    jax_one_worker_success_is_not_enough {
        spec: "§5",
        job: "JAXJob Worker=2",
        before: "Running",
        observed: "all Running; worker-0 Succeeded",
        plan: "status unchanged",
    }
    jax_every_worker_decides {
        spec: "§5",
        job: "JAXJob Worker=2",
        before: "Running",
        observed: "all Succeeded",
        plan: "Created, Running=False, Succeeded: JAXJobSucceeded \"JAXJob ml/mnist successfully completed.\"; events Normal JAXJobSucceeded; count succeeded",
    }
    mpi_launcher_running_sets_running {
        spec: "§5",
        job: "MPIJob Launcher=1 Worker=2",
        before: "Created",
        observed: "all Running",
        plan: "Created, Running: MPIJobRunning \"MPIJob mnist is running.\"",
    }
    mpi_launcher_success_decides_job {
        spec: "§5",
        job: "MPIJob Launcher=1 Worker=2",
        before: "Running",
        observed: "all Running; launcher-0 Succeeded exit=0",
        plan: "Created, Running=False, Succeeded: MPIJobSucceeded \"MPIJob mnist is successfully completed.\"; events Normal ExitedWithCode, Normal MPIJobSucceeded; count succeeded",
    }
    mpi_job_has_no_services {
        spec: "§3",
        job: "MPIJob Launcher=1 Worker=2",
        before: "new",
        observed: "nothing",
        plan: "Created: MPIJobCreated \"MPIJob mnist is created.\"; create pods worker-0, worker-1, launcher-0; count created",
    }
    // §5: failure, and what is absorbing.
    tf_ps_failure_fails_the_job {
        spec: "§5",
        job: "TFJob PS=1 Worker=2",
        before: "Running",
        observed: "all Running; ps-0 Failed exit=1",
        plan: "Created, Running=False, Failed: TFJobFailed \"TFJob ml/mnist has failed because 1 PS replica(s) failed.\"; events Normal ExitedWithCode, Warning TFJobFailed; count failed",
    }
    tf_dynamic_worker_failure_is_ignored {
        spec: "§5",
        job: "TFJob PS=1 Worker=2 dynamicWorker",
        before: "Running",
        observed: "all Running; worker-1 Failed exit=1",
        plan: "status unchanged; events Normal ExitedWithCode",
    }
    pytorch_worker_failure_under_never_fails_the_job {
        spec: "§5",
        job: "PyTorchJob Master=1 Worker=2/Never",
        before: "Running",
        observed: "all Running; worker-0 Failed exit=2; worker-1 Failed exit=1",
        plan: "Created, Running=False, Failed: PyTorchJobFailed \"PyTorchJob mnist is failed because 2 Worker replica(s) failed.\"; events Normal ExitedWithCode, Normal ExitedWithCode, Warning PyTorchJobFailed; count failed",
    }
    mpi_launcher_failure_fails_the_job {
        spec: "§5",
        job: "MPIJob Launcher=1 Worker=2",
        before: "Running",
        observed: "all Running; launcher-0 Failed exit=1",
        plan: "Created, Running=False, Failed: MPIJobFailed \"MPIJob mnist is failed because 1 Launcher replica(s) failed.\"; events Normal ExitedWithCode, Warning MPIJobFailed; count failed",
    }
    mxnet_server_failure_fails_the_job_in_upstreams_words {
        spec: "§5",
        job: "MXJob jobMode=MXTrain Scheduler=1 Server=1 Worker=2",
        before: "Running",
        observed: "all Running; server-0 Failed exit=1",
        plan: "Created, Running=False, Failed: MXJobFailed \"mxjob mnist is failed because 1 Server replica(s) failed.\"; events Normal ExitedWithCode, Warning MXJobFailed; count failed",
    }
    success_wins_when_both_are_decided_at_once {
        spec: "§5 [fix]",
        job: "TFJob Chief=1 Worker=2",
        before: "Running",
        observed: "all Running; chief-0 Succeeded; worker-1 Failed exit=1",
        plan: "Created, Running=False, Succeeded: TFJobSucceeded \"TFJob ml/mnist successfully completed.\"; events Normal ExitedWithCode, Normal TFJobSucceeded; count succeeded",
    }
    failed_is_absorbing {
        spec: "§5",
        job: "TFJob Chief=1 Worker=2",
        before: "Failed",
        observed: "all Running; chief-0 Succeeded",
        plan: "status unchanged",
    }
    succeeded_is_absorbing {
        spec: "§5",
        job: "TFJob Chief=1 Worker=2",
        before: "Succeeded",
        observed: "chief-0 Succeeded; worker-0 Failed exit=1; worker-1 Failed exit=1",
        plan: "status unchanged; events Normal ExitedWithCode, Normal ExitedWithCode",
    }
    // §5 [fix]: Pending reasons are visible.
    pending_reason_names_missing_gpus {
        spec: "§5 [fix]",
        job: "TFJob Worker=2",
        before: "Created",
        observed: "no services; waiting=gpu:2/1",
        plan: "Created: TFJobCreated \"TFJob mnist is created. Pending: waiting for 2 GPUs, 1 free.\"; create services worker-0, worker-1; events Normal TFJobPending",
    }
    pending_reason_names_the_pod_that_cannot_start {
        spec: "§5 [fix]",
        job: "TFJob Worker=2",
        before: "Created",
        observed: "worker-0 Running; worker-1 Pending reason=ImagePullBackOff",
        plan: "Created, Running: TFJobRunning \"TFJob ml/mnist is running.\" (Created \"TFJob mnist is created. Pending: mnist-worker-1 is pending (ImagePullBackOff).\"); events Normal TFJobPending",
    }
    pending_reason_names_the_pods_the_api_server_refused {
        spec: "§5 [fix]",
        job: "TFJob Worker=3",
        before: "Created",
        observed: "worker-0 Running; refused=worker-1; refused=worker-2",
        plan: "Created, Running: TFJobRunning \"TFJob ml/mnist is running.\" (Created \"TFJob mnist is created. Pending: mnist-worker-1 cannot be created (exceeded quota: q); 1 more cannot be created.\"); create pods worker-1, worker-2; create services worker-1, worker-2; events Normal TFJobPending",
    }
    pending_reason_clears_once_replicas_start {
        spec: "§5 [fix]",
        job: "TFJob Worker=2",
        before: "Created",
        observed: "all Running",
        plan: "Created, Running: TFJobRunning \"TFJob ml/mnist is running.\"",
    }
    volcano_gang_waits_for_its_pod_group {
        spec: "§3",
        job: "PyTorchJob Master=1 Worker=2",
        before: "Created",
        observed: "podgroup=Pending",
        plan: "Created: PyTorchJobCreated \"PyTorchJob mnist is created. Pending: waiting for the gang scheduler to admit PodGroup mnist (phase Pending).\"; ensure PodGroup; events Normal PyTorchJobPending",
    }
    pending_reason_names_the_queue {
        spec: "§5 [fix]",
        job: "XGBoostJob Master=1 Worker=1",
        before: "Created",
        observed: "queued",
        plan: "Created: XGBoostJobCreated \"XGBoostJob mnist is created. Pending: queued behind other jobs.\"; create services master-0, worker-0; events Normal XGBoostJobPending",
    }
    volcano_gang_creates_pods_once_admitted {
        spec: "§3",
        job: "PyTorchJob Master=1 Worker=2",
        before: "Created",
        observed: "podgroup=Inqueue",
        plan: "status unchanged; create pods master-0, worker-0, worker-1; create services master-0, worker-0, worker-1; ensure PodGroup",
    }
    volcano_pod_group_goes_when_the_job_finishes {
        spec: "§3",
        job: "PyTorchJob Master=1 Worker=2",
        before: "Running",
        observed: "all Running; master-0 Succeeded; podgroup=Running",
        plan: "Created, Running=False, Succeeded: PyTorchJobSucceeded \"PyTorchJob mnist is successfully completed.\"; delete PodGroup; events Normal PyTorchJobSucceeded; count succeeded",
    }
    // §6: restart policies.
    on_failure_policy_recreates_a_failed_pod {
        spec: "§6",
        job: "PyTorchJob Master=1 Worker=2",
        before: "Running",
        observed: "all Running; worker-1 Failed reason=Evicted",
        plan: "Created, Restarting: PyTorchJobRestarting \"PyTorchJob mnist is restarting because 1 Worker replica(s) failed.\"; delete pods worker-1 (restart); events Warning PyTorchJobRestarting; count restarted; retired restarts 0 → 1",
    }
    mxnet_on_failure_policy_recreates_an_evicted_pod {
        spec: "§6 [fix]",
        job: "MXJob jobMode=MXTrain Scheduler=1 Server=1/OnFailure Worker=2",
        before: "Running",
        observed: "all Running; server-0 Failed reason=Evicted",
        plan: "Created, Restarting: MXJobRestarting \"mxjob mnist is restarting because 1 Server replica(s) failed.\"; delete pods server-0 (restart); events Warning MXJobRestarting; count restarted; retired restarts 0 → 1",
    }
    always_policy_recreates_a_failed_pod {
        spec: "§6",
        job: "TFJob Worker=2/Always",
        before: "Running",
        observed: "all Running; worker-1 Failed exit=1",
        plan: "Created, Restarting: TFJobRestarting \"TFJob mnist is restarting because 1 Worker replica(s) failed.\"; delete pods worker-1 (restart); events Normal ExitedWithCode, Warning TFJobRestarting; count restarted; retired restarts 0 → 1",
    }
    exit_code_policy_restarts_on_137 {
        spec: "§6",
        job: "TFJob Worker=2/ExitCode",
        before: "Running",
        observed: "all Running; worker-1 Failed exit=137",
        plan: "Created, Restarting: TFJobRestarting \"TFJob mnist is restarting because 1 Worker replica(s) failed.\"; delete pods worker-1 (restart); events Normal ExitedWithCode, Warning TFJobRestarting; count restarted; retired restarts 0 → 1",
    }
    exit_code_policy_restarts_on_143 {
        spec: "§6",
        job: "XGBoostJob Master=1 Worker=2/ExitCode",
        before: "Running",
        observed: "all Running; worker-0 Failed exit=143",
        plan: "Created, Restarting: XGBoostJobRestarting \"XGBoostJob mnist is restarting because 1 Worker replica(s) failed.\"; delete pods worker-0 (restart); events Normal ExitedWithCode, Warning XGBoostJobRestarting; count restarted; retired restarts 0 → 1",
    }
    exit_code_policy_fails_on_1 {
        spec: "§6",
        job: "TFJob Worker=2/ExitCode",
        before: "Running",
        observed: "all Running; worker-1 Failed exit=1",
        plan: "Created, Running=False, Failed: TFJobFailed \"TFJob ml/mnist has failed because 1 Worker replica(s) failed.\"; events Normal ExitedWithCode, Warning TFJobFailed; count failed",
    }
    exit_code_policy_retries_a_pod_evicted_without_exit_code {
        spec: "§6",
        job: "JAXJob Worker=2/ExitCode",
        before: "Running",
        observed: "all Running; worker-1 Failed reason=Evicted",
        plan: "Created, Restarting: JAXJobRestarting \"JAXJob mnist is restarting because 1 Worker replica(s) failed.\"; delete pods worker-1 (restart); events Warning JAXJobRestarting; count restarted; retired restarts 0 → 1",
    }
    never_policy_fails_the_job {
        spec: "§6",
        job: "JAXJob Worker=2",
        before: "Running",
        observed: "all Running; worker-1 Failed exit=137",
        plan: "Created, Running=False, Failed: JAXJobFailed \"JAXJob mnist is failed because 1 Worker replica(s) failed.\"; events Normal ExitedWithCode, Warning JAXJobFailed; count failed",
    }
    restarted_pod_is_not_recreated_while_terminating {
        spec: "§6",
        job: "TFJob Worker=2/ExitCode",
        before: "Restarting",
        observed: "all Running; worker-1 Failed exit=137 deleting",
        plan: "status unchanged; events Normal ExitedWithCode",
    }
    restarted_slot_is_recreated_once_its_pod_is_gone {
        spec: "§6",
        job: "TFJob Worker=2/ExitCode",
        before: "Restarting",
        observed: "worker-0 Running; services",
        plan: "status unchanged; create pods worker-1",
    }
    restarting_lasts_until_every_slot_is_up {
        spec: "§5",
        job: "TFJob Worker=2/ExitCode",
        before: "Restarting",
        observed: "worker-0 Running; worker-1 Pending",
        plan: "status unchanged",
    }
    restarting_becomes_running_when_every_slot_is_up {
        spec: "§5",
        job: "TFJob Worker=2/ExitCode",
        before: "Restarting",
        observed: "all Running",
        plan: "Created, Running: TFJobRunning \"TFJob ml/mnist is running.\"",
    }
    restart_back_off_delays_recreation {
        spec: "§6",
        job: "TFJob Worker=2/ExitCode",
        before: "Running",
        observed: "all Running; worker-1 Failed exit=137 finished=-4s; backoff=10s",
        plan: "Created, Restarting: TFJobRestarting \"TFJob mnist is restarting because 1 Worker replica(s) failed.\"; events Normal ExitedWithCode, Warning TFJobRestarting; requeue 6s; count restarted",
    }
    restart_back_off_elapsed_recreates {
        spec: "§6",
        job: "TFJob Worker=2/ExitCode",
        before: "Restarting",
        observed: "all Running; worker-1 Failed exit=137 finished=-10s; backoff=10s",
        plan: "status unchanged; delete pods worker-1 (restart); events Normal ExitedWithCode; retired restarts 0 → 1",
    }
    // §6 [fix]: backoffLimit counts every restart.
    backoff_limit_allows_n_restarts {
        spec: "§6 [fix]",
        job: "TFJob Worker=2/ExitCode backoffLimit=2",
        before: "Running",
        observed: "all Running; worker-1 Failed exit=137; retired=1",
        plan: "Created, Restarting: TFJobRestarting \"TFJob mnist is restarting because 1 Worker replica(s) failed.\"; delete pods worker-1 (restart); events Normal ExitedWithCode, Warning TFJobRestarting; count restarted; retired restarts 1 → 2",
    }
    backoff_limit_fails_the_next_failure {
        spec: "§6 [fix]",
        job: "TFJob Worker=2/ExitCode backoffLimit=2",
        before: "Running",
        observed: "all Running; worker-1 Failed exit=137; retired=2",
        plan: "Created, Running=False, Failed: TFJobFailed \"Job mnist has failed because it has reached the specified backoff limit\"; delete pods worker-0 (failure); delete services worker-0 (failure); events Normal ExitedWithCode, Warning TFJobFailed; count failed",
    }
    backoff_limit_zero_fails_the_first_failure {
        spec: "§6 [fix]",
        job: "PyTorchJob Master=1 Worker=1 backoffLimit=0",
        before: "Running",
        observed: "all Running; worker-0 Failed exit=1",
        plan: "Created, Running=False, Failed: PyTorchJobFailed \"Job mnist has failed because it has reached the specified backoff limit\"; delete pods master-0 (failure); delete services master-0 (failure); events Normal ExitedWithCode, Warning PyTorchJobFailed; count failed",
    }
    in_place_restarts_count_toward_backoff_limit {
        spec: "§6 [fix]",
        job: "PyTorchJob Master=1 Worker=2 backoffLimit=2",
        before: "Running",
        observed: "master-0 Running restarts=1; worker-0 Running restarts=2; worker-1 Running",
        plan: "Created, Running=False, Failed: PyTorchJobFailed \"Job mnist has failed because it has reached the specified backoff limit\"; delete pods master-0 (failure), worker-0 (failure), worker-1 (failure); delete services master-0 (failure), worker-0 (failure), worker-1 (failure); events Warning PyTorchJobFailed; count failed; retired restarts 0 → 3",
    }
    in_place_restarts_within_backoff_limit_are_fine {
        spec: "§6 [fix]",
        job: "PyTorchJob Master=1 Worker=2 backoffLimit=3",
        before: "Running",
        observed: "master-0 Running restarts=1; worker-0 Running restarts=2; worker-1 Running",
        plan: "status unchanged",
    }
    backoff_failure_stops_running_pods_and_keeps_finished_ones {
        spec: "§6 [fix]",
        job: "PyTorchJob Master=1 Worker=2 backoffLimit=1",
        before: "Running",
        observed: "master-0 Running; worker-0 Succeeded; worker-1 Failed exit=1; retired=1",
        plan: "Created, Running=False, Failed: PyTorchJobFailed \"Job mnist has failed because it has reached the specified backoff limit\"; delete pods master-0 (failure); delete services master-0 (failure); events Normal ExitedWithCode, Warning PyTorchJobFailed; count failed",
    }
    // §6 [fix]: activeDeadlineSeconds by timer.
    deadline_requeues_until_due {
        spec: "§6 [fix]",
        job: "TFJob Worker=2 deadline=60",
        before: "Running started=-20s",
        observed: "all Running",
        plan: "status unchanged; requeue 40s",
    }
    deadline_fails_the_job_on_time {
        spec: "§6 [fix]",
        job: "TFJob Worker=2 deadline=60",
        before: "Running started=-60s",
        observed: "all Running",
        plan: "Created, Running=False, Failed: TFJobFailed \"Job mnist has failed because it was active longer than specified deadline\"; delete pods worker-0 (failure), worker-1 (failure); delete services worker-0 (failure), worker-1 (failure); events Warning TFJobFailed; count failed",
    }
    // §6: cleanPodPolicy when the job finishes.
    clean_pod_policy_running_deletes_active_pods {
        spec: "§6",
        job: "TFJob PS=1 Worker=2 clean=Running",
        before: "Running",
        observed: "all Running; worker-0 Succeeded",
        plan: "Created, Running=False, Succeeded: TFJobSucceeded \"TFJob ml/mnist successfully completed.\"; delete pods ps-0 (cleanup), worker-1 (cleanup); delete services ps-0 (cleanup), worker-1 (cleanup); events Normal TFJobSucceeded; count succeeded",
    }
    clean_pod_policy_all_deletes_every_pod {
        spec: "§6",
        job: "TFJob PS=1 Worker=2 clean=All",
        before: "Running",
        observed: "all Running; worker-0 Succeeded",
        plan: "Created, Running=False, Succeeded: TFJobSucceeded \"TFJob ml/mnist successfully completed.\"; delete pods ps-0 (cleanup), worker-0 (cleanup), worker-1 (cleanup); delete services ps-0 (cleanup), worker-0 (cleanup), worker-1 (cleanup); events Normal TFJobSucceeded; count succeeded",
    }
    clean_pod_policy_none_keeps_every_pod {
        spec: "§6",
        job: "TFJob PS=1 Worker=2",
        before: "Running",
        observed: "all Running; worker-0 Succeeded",
        plan: "Created, Running=False, Succeeded: TFJobSucceeded \"TFJob ml/mnist successfully completed.\"; events Normal TFJobSucceeded; count succeeded",
    }
    finished_job_finishes_its_cleanup {
        spec: "§6",
        job: "TFJob PS=1 Worker=2 clean=Running",
        before: "Succeeded",
        observed: "ps-0 Running; worker-0 Succeeded; worker-1 Running deleting",
        plan: "status unchanged; delete pods ps-0 (cleanup); delete services ps-0 (cleanup), worker-1 (cleanup)",
    }
    // §6: TTL, and finished jobs cost nothing.
    finished_job_costs_nothing {
        spec: "§6 [fix]",
        job: "TFJob PS=1 Worker=2",
        before: "Succeeded",
        observed: "all Succeeded",
        plan: "status unchanged",
    }
    ttl_requeues_until_it_expires {
        spec: "§6",
        job: "TFJob Worker=2 ttl=30",
        before: "Succeeded completed=-10s",
        observed: "all Succeeded",
        plan: "status unchanged; requeue 20s",
    }
    ttl_expired_deletes_the_job {
        spec: "§6",
        job: "TFJob Worker=2 ttl=30",
        before: "Failed completed=-30s",
        observed: "all Succeeded",
        plan: "status unchanged; delete job",
    }
    ttl_starts_when_the_job_finishes {
        spec: "§6",
        job: "JAXJob Worker=2 ttl=30",
        before: "Running",
        observed: "all Succeeded",
        plan: "Created, Running=False, Succeeded: JAXJobSucceeded \"JAXJob ml/mnist successfully completed.\"; events Normal JAXJobSucceeded; requeue 30s; count succeeded",
    }
    // §6: suspend and resume.
    suspend_deletes_every_pod_and_service {
        spec: "§6",
        job: "PyTorchJob Master=1 Worker=2 suspend",
        before: "Running",
        observed: "all Running",
        plan: "Created, Running=False, Suspended: PyTorchJobSuspended \"PyTorchJob mnist is suspended.\"; delete pods master-0 (suspend), worker-0 (suspend), worker-1 (suspend); delete services master-0 (suspend), worker-0 (suspend), worker-1 (suspend); events Normal PyTorchJobSuspended",
    }
    suspended_job_stays_quiet {
        spec: "§6",
        job: "PyTorchJob Master=1 Worker=2 suspend",
        before: "Suspended",
        observed: "nothing",
        plan: "status unchanged",
    }
    new_suspended_job_creates_nothing {
        spec: "§6",
        job: "TFJob Worker=2 suspend",
        before: "new",
        observed: "nothing",
        plan: "Created, Suspended: TFJobSuspended \"TFJob mnist is suspended.\"; events Normal TFJobSuspended; count created",
    }
    resume_resets_start_time_and_creates_pods {
        spec: "§6",
        job: "PyTorchJob Master=1 Worker=2",
        before: "Suspended",
        observed: "nothing",
        plan: "Created, Running=False, Suspended=False: PyTorchJobResumed \"PyTorchJob mnist is resumed.\"; create pods master-0, worker-0, worker-1; create services master-0, worker-0, worker-1; events Normal PyTorchJobResumed",
    }
    managed_by_multikueue_is_left_alone {
        spec: "§6",
        job: "TFJob Worker=2 multikueue",
        before: "new",
        observed: "nothing",
        plan: "status unchanged",
    }
    // §6: scaling.
    scale_down_deletes_pods_and_services_beyond_replicas {
        spec: "§6",
        job: "PyTorchJob Master=1 Worker=2",
        before: "Running",
        observed: "all Running; worker-2 Running; worker-3 Failed exit=1",
        plan: "status unchanged; delete pods worker-2 (scale-down), worker-3 (scale-down); delete services worker-2 (scale-down), worker-3 (scale-down); events Normal ExitedWithCode",
    }
    scale_up_creates_missing_pods_and_services {
        spec: "§6",
        job: "PyTorchJob Master=1 Worker=4",
        before: "Running",
        observed: "master-0 Running; worker-0 Running; worker-1 Running",
        plan: "status unchanged; create pods worker-2, worker-3; create services worker-2, worker-3",
    }
    // §3: an autoscaled PyTorchJob's HorizontalPodAutoscaler, in every state but suspended.
    autoscaled_job_gets_its_hpa {
        spec: "§3",
        job: "PyTorchJob Worker=2 autoscaled",
        before: "new",
        observed: "nothing",
        plan: "Created: PyTorchJobCreated \"PyTorchJob mnist is created.\"; create pods worker-0, worker-1; create services worker-0, worker-1; apply HPA; count created",
    }
    running_autoscaled_job_keeps_its_hpa_applied {
        spec: "§3",
        job: "PyTorchJob Worker=2 autoscaled",
        before: "Running",
        observed: "all Running",
        plan: "status unchanged; apply HPA",
    }
    suspended_autoscaled_job_deletes_its_hpa {
        spec: "§3, §6",
        job: "PyTorchJob Worker=2 autoscaled suspend",
        before: "Running",
        observed: "all Running",
        plan: "Created, Running=False, Suspended: PyTorchJobSuspended \"PyTorchJob mnist is suspended.\"; delete pods worker-0 (suspend), worker-1 (suspend); delete services worker-0 (suspend), worker-1 (suspend); delete HPA; events Normal PyTorchJobSuspended",
    }
    finished_autoscaled_job_keeps_its_hpa {
        spec: "§3",
        job: "PyTorchJob Worker=2 autoscaled",
        before: "Succeeded",
        observed: "all Succeeded",
        plan: "status unchanged; apply HPA",
    }
}
