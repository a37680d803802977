//! The unit tests of gang admission.

use super::*;

fn worker(index: i32, gpus: u32) -> ReplicaNeeds {
    ReplicaNeeds {
        slot: (ReplicaType::Worker, index),
        cpu_millis: 1_000,
        memory_bytes: 1 << 30,
        gpus,
    }
}

fn machine(gpus: u32) -> NodeCapacity {
    NodeCapacity {
        cpu_millis: 8_000,
        memory_bytes: 16 << 30,
        gpus: (0..gpus).collect(),
    }
}

#[test]
fn fitting_job_gets_disjoint_gpus_lowest_first() {
    let capacity = machine(4);
    let needs = [worker(1, 2), worker(0, 1)];
    let Admission::Admitted(allocation) =
        admit(&needs, &FreeResources::all_of(&capacity), &capacity)
    else {
        panic!("not admitted");
    };
    assert_eq!(allocation.gpus[&(ReplicaType::Worker, 0)], [0]);
    assert_eq!(allocation.gpus[&(ReplicaType::Worker, 1)], [1, 2]);
}

#[test]
fn gpus_held_by_other_jobs_are_skipped() {
    let capacity = machine(4);
    let mut free = FreeResources::all_of(&capacity);
    free.gpus.remove(&0);
    free.gpus.remove(&2);
    let Admission::Admitted(allocation) = admit(&[worker(0, 2)], &free, &capacity) else {
        panic!("not admitted");
    };
    assert_eq!(allocation.gpus[&(ReplicaType::Worker, 0)], [1, 3]);
}

#[test]
fn job_that_fits_later_waits_with_shortfalls() {
    let capacity = machine(4);
    let mut free = FreeResources::all_of(&capacity);
    free.gpus = BTreeSet::from([3]);
    free.cpu_millis = 1_500;
    assert_eq!(
        admit(&[worker(0, 1), worker(1, 1)], &free, &capacity),
        Admission::Wait(vec![
            Shortfall {
                resource: Resource::Gpu,
                needed: 2,
                free: 1
            },
            Shortfall {
                resource: Resource::CpuMillis,
                needed: 2_000,
                free: 1_500
            },
        ])
    );
}

#[test]
fn gang_admission_starts_no_replica_unless_all_fit() {
    let capacity = machine(2);
    let mut free = FreeResources::all_of(&capacity);
    free.gpus = BTreeSet::from([0]);
    let admission = admit(&[worker(0, 1), worker(1, 1)], &free, &capacity);
    assert!(matches!(admission, Admission::Wait(_)), "{admission:?}");
}

#[test]
fn job_larger_than_the_machine_never_fits() {
    let capacity = machine(4);
    let needs: Vec<ReplicaNeeds> = (0..3).map(|i| worker(i, 2)).collect();
    assert_eq!(
        admit(&needs, &FreeResources::all_of(&capacity), &capacity),
        Admission::NeverFits(
            "the job can never start here: its replicas together need 6 GPUs but this machine \
             has 4 GPUs; lower their resource requests, run the job on a larger machine, or \
             pretend this one is larger with --gpus 6"
                .to_owned()
        )
    );
}

#[test]
fn never_fits_names_every_resource_short() {
    let capacity = machine(0);
    let needs = ReplicaNeeds {
        slot: (ReplicaType::Master, 0),
        cpu_millis: 8_500,
        memory_bytes: 32 << 30,
        gpus: 1,
    };
    let Admission::NeverFits(message) =
        admit(&[needs], &FreeResources::all_of(&capacity), &capacity)
    else {
        panic!("fits");
    };
    assert!(
        message.contains("1 GPU but this machine has 0 GPUs"),
        "{message}"
    );
    assert!(
        message.contains("8500m CPU but this machine has 8 CPUs"),
        "{message}"
    );
    assert!(
        message.contains("32Gi memory but this machine has 16Gi memory"),
        "{message}"
    );
    assert!(
        message.ends_with("pretend this one is larger with --gpus 1 --cpus 8500m --memory 32Gi"),
        "{message}"
    );
}

#[test]
fn a_machines_memory_reads_in_gib_to_one_decimal() {
    // 24684092Ki, as /proc/meminfo gives it.
    let machine = 24_684_092 * 1024;
    assert_eq!(
        amount_words(Resource::MemoryBytes, machine),
        "23.5Gi memory"
    );
    assert_eq!(
        amount_words(Resource::MemoryBytes, 900 << 30),
        "900Gi memory"
    );
    assert_eq!(amount_words(Resource::MemoryBytes, 64 << 20), "64Mi memory");
    assert_eq!(
        amount_words(Resource::MemoryBytes, 1536 << 10),
        "1536Ki memory"
    );
    assert_eq!(
        machine_flag(Resource::MemoryBytes, (1 << 30) + 1),
        "--memory 1025Mi"
    );
}

#[test]
fn job_without_needs_is_admitted_with_no_gpus() {
    let capacity = machine(0);
    let needs = ReplicaNeeds {
        slot: (ReplicaType::Worker, 0),
        cpu_millis: 0,
        memory_bytes: 0,
        gpus: 0,
    };
    let admission = admit(&[needs], &FreeResources::all_of(&capacity), &capacity);
    let Admission::Admitted(allocation) = admission else {
        panic!("not admitted");
    };
    assert_eq!(
        allocation.device_env(&(ReplicaType::Worker, 0)),
        [
            ("CUDA_VISIBLE_DEVICES", String::new()),
            ("NVIDIA_VISIBLE_DEVICES", "none".to_owned())
        ]
    );
}

#[test]
fn device_env_lists_the_slots_gpus() {
    let allocation = Allocation {
        gpus: BTreeMap::from([((ReplicaType::Worker, 0), vec![2, 3])]),
    };
    assert_eq!(
        allocation.device_env(&(ReplicaType::Worker, 0)),
        [
            ("CUDA_VISIBLE_DEVICES", "2,3".to_owned()),
            ("NVIDIA_VISIBLE_DEVICES", "2,3".to_owned())
        ]
    );
}

#[test]
fn amounts_count_gpus_whichever_their_index() {
    let capacity = machine(4);
    let mut free = FreeResources::all_of(&capacity);
    free.gpus = BTreeSet::from([1, 3]);
    free.cpu_millis = 1_500;
    let request = Amounts::of(&[worker(0, 1), worker(1, 1)]);
    assert_eq!(
        request,
        Amounts {
            cpu_millis: 2_000,
            memory_bytes: 2 << 30,
            gpus: 2
        }
    );
    assert_eq!(
        request.short_of(&Amounts::free(&free)),
        [(Resource::CpuMillis, 2_000, 1_500)]
    );
    free.cpu_millis = 2_000;
    assert!(request.fits_in(&Amounts::free(&free)));
    assert!(
        matches!(admit(&[worker(0, 1), worker(1, 1)], &free, &capacity), Admission::Admitted(a) if a.gpus[&(ReplicaType::Worker, 0)] == [1])
    );
    assert_eq!(Amounts::capacity(&capacity).gpus, 4);
}

#[test]
fn amounts_add_subtract_and_say_what_they_are() {
    let a = Amounts {
        cpu_millis: 1_500,
        memory_bytes: 4 << 30,
        gpus: 1,
    };
    let b = Amounts {
        cpu_millis: 2_000,
        memory_bytes: 1 << 30,
        gpus: 0,
    };
    assert_eq!(a.plus(&b).minus(&b), a);
    assert_eq!(
        a.minus(&b),
        Amounts {
            cpu_millis: 0,
            memory_bytes: 3 << 30,
            gpus: 1
        }
    );
    assert_eq!(
        a.min(&b),
        Amounts {
            cpu_millis: 1_500,
            memory_bytes: 1 << 30,
            gpus: 0
        }
    );
    assert_eq!(a.to_string(), "1500m CPU, 4Gi memory, 1 GPU");
    assert_eq!(Amounts::default().to_string(), "nothing");
}

#[test]
fn reserve_and_release_are_inverse() {
    let capacity = machine(4);
    let all = FreeResources::all_of(&capacity);
    let needs = [worker(0, 2)];
    let Admission::Admitted(allocation) = admit(&needs, &all, &capacity) else {
        panic!("not admitted");
    };
    let mut free = all.clone();
    free.reserve(&needs, &allocation);
    assert_eq!(free.gpus, BTreeSet::from([2, 3]));
    assert_eq!(free.cpu_millis, 7_000);
    free.release(&needs, &allocation);
    assert_eq!(free, all);
}
