//! The leg pool (issue 17 item 3, docs/architecture.md "Leg threads from a pool"): workers are
//! reused, survive panics, queue legs beyond the cap and complete them, keep the executor free
//! while every worker is busy, and a leg that waited past its deadline stops at once.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use codemode_runtime::{
    in_leg, on_leg_stack, run_leg, run_leg_with, AbortHandle, LegBudget, LegPanic, LegPool,
    LegPoolConfig, LegThreads, Runtime, VmError, VmLimits, LEG_THREAD_NAME,
};

fn pool(max_workers: usize, keep_alive: Duration) -> LegPool {
    LegPool::new(LegPoolConfig {
        max_workers,
        keep_alive,
    })
}

fn current_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Where a leg ran: thread id, thread name, whether it is marked as a leg thread.
fn whereabouts() -> (ThreadId, String, bool) {
    let me = std::thread::current();
    (me.id(), me.name().unwrap_or("").to_string(), in_leg())
}

#[test]
fn sequential_legs_reuse_one_worker() {
    let rt = current_thread_runtime();
    let pool = pool(4, Duration::from_secs(60));
    let seen: Vec<_> = (0..10)
        .map(|_| rt.block_on(pool.run(whereabouts)).unwrap())
        .collect();
    let first = seen[0].clone();
    assert_eq!(first.1, LEG_THREAD_NAME);
    assert!(first.2, "a worker is marked as a leg thread");
    assert_ne!(first.0, std::thread::current().id());
    assert!(seen.iter().all(|w| *w == first), "{seen:?}");
    assert_eq!(pool.workers(), 1);
    assert_eq!(pool.idle_workers(), 1);
}

#[test]
fn the_global_pool_runs_legs_on_marked_big_stack_threads() {
    let rt = current_thread_runtime();
    let (id, name, marked) = rt.block_on(run_leg(whereabouts)).unwrap();
    assert_eq!(name, LEG_THREAD_NAME);
    assert!(marked);
    assert_ne!(id, std::thread::current().id());
    // on_leg_stack inside a leg runs in place, on the worker itself.
    let (outer, inner) = rt
        .block_on(run_leg(|| {
            let outer = std::thread::current().id();
            (outer, on_leg_stack(|| std::thread::current().id()).unwrap())
        }))
        .unwrap();
    assert_eq!(outer, inner);
    // Deep native recursion that needs a leg-sized stack (well over the 8 MiB default).
    fn depth(n: u64) -> u64 {
        let pad = std::hint::black_box([n as u8; 1024]);
        if n == 0 {
            u64::from(pad[0])
        } else {
            depth(n - 1) + 1
        }
    }
    assert_eq!(rt.block_on(run_leg(|| depth(20_000))).unwrap(), 20_000);
    // The fresh-thread path is still there and marked the same way.
    let (fresh, name, marked) = rt
        .block_on(run_leg_with(LegThreads::Fresh, whereabouts))
        .unwrap();
    assert_eq!((name.as_str(), marked), (LEG_THREAD_NAME, true));
    assert_ne!(fresh, id);
}

#[test]
fn a_panicking_leg_does_not_kill_its_worker() {
    let rt = current_thread_runtime();
    let pool = pool(1, Duration::from_secs(60));
    let (before, _, _) = rt.block_on(pool.run(whereabouts)).unwrap();
    let panicked = rt.block_on(pool.run(|| -> u32 { panic!("boom") }));
    assert_eq!(panicked, Err(LegPanic("boom".into())));
    let formatted = rt.block_on(pool.run(|| -> u32 { panic!("bad {}", 7) }));
    assert_eq!(
        formatted.unwrap_err().to_string(),
        "code mode host panicked: bad 7"
    );
    // Same thread afterwards, still marked as a leg thread, and on_leg_stack still runs in place.
    let (after, name, marked) = rt.block_on(pool.run(whereabouts)).unwrap();
    assert_eq!(
        (after, name.as_str(), marked),
        (before, LEG_THREAD_NAME, true)
    );
    let in_place = rt
        .block_on(pool.run(|| {
            on_leg_stack(|| std::thread::current().id()).unwrap() == std::thread::current().id()
        }))
        .unwrap();
    assert!(in_place);
    // A panic inside on_leg_stack, inside a leg, is contained there too.
    let nested = rt
        .block_on(pool.run(|| on_leg_stack(|| -> u8 { panic!("inner") })))
        .unwrap();
    assert_eq!(nested, Err(LegPanic("inner".into())));
    assert_eq!(pool.workers(), 1);
    assert_eq!(rt.block_on(pool.run(|| 41 + 1)), Ok(42));
}

/// A result whose drop panics, returned to a caller that gave up: the worker survives.
#[test]
fn a_panicking_drop_on_the_worker_does_not_kill_it() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("drop bomb");
        }
    }
    let rt = current_thread_runtime();
    let pool = pool(1, Duration::from_secs(60));
    let (before, _, _) = rt.block_on(pool.run(whereabouts)).unwrap();
    let started = Arc::new(std::sync::Barrier::new(2));
    let release = Arc::new(std::sync::Barrier::new(2));
    let leg = {
        let (started, release) = (started.clone(), release.clone());
        pool.run(move || {
            started.wait();
            release.wait();
            Bomb
        })
    };
    // Poll the leg until the worker has it, then drop the future: the caller is gone.
    rt.block_on(async {
        let mut leg = std::pin::pin!(leg);
        tokio::select! {
            _ = &mut leg => panic!("the leg cannot finish before release"),
            _ = tokio::task::spawn_blocking(move || started.wait()) => {}
        }
    });
    release.wait();
    // The worker drops the Bomb (its drop panics), then takes the next leg.
    let (after, _, marked) = rt.block_on(pool.run(whereabouts)).unwrap();
    assert_eq!((after, marked), (before, true));
    assert_eq!(pool.workers(), 1);
}

#[test]
fn more_legs_than_workers_queue_and_all_complete() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let pool = pool(2, Duration::from_secs(60));
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let threads = Arc::new(Mutex::new(HashSet::new()));
    let results = rt.block_on(async {
        let legs: Vec<_> = (0..8u32)
            .map(|i| {
                let (pool, running, most, threads) =
                    (pool.clone(), running.clone(), most.clone(), threads.clone());
                tokio::spawn(async move {
                    pool.run(move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        threads.lock().unwrap().insert(std::thread::current().id());
                        std::thread::sleep(Duration::from_millis(30));
                        running.fetch_sub(1, Ordering::SeqCst);
                        i * 10
                    })
                    .await
                })
            })
            .collect();
        let mut out = Vec::new();
        for leg in legs {
            out.push(leg.await.unwrap().unwrap());
        }
        out
    });
    assert_eq!(results, vec![0, 10, 20, 30, 40, 50, 60, 70]);
    assert_eq!(most.load(Ordering::SeqCst), 2);
    assert_eq!(threads.lock().unwrap().len(), 2);
    assert_eq!(pool.workers(), 2);
    assert_eq!(pool.idle_workers(), 2);
}

#[test]
fn many_legs_that_await_nothing_do_not_deadlock() {
    // Instant legs from many tasks on a single-threaded executor, through a one-worker pool:
    // every caller waits for the one worker without blocking the executor the others need.
    let rt = current_thread_runtime();
    let pool = pool(1, Duration::from_secs(60));
    let sum = rt.block_on(async {
        let legs: Vec<_> = (0..200u64)
            .map(|i| {
                let pool = pool.clone();
                tokio::spawn(async move { pool.run(move || i).await.unwrap() })
            })
            .collect();
        let mut sum = 0;
        for leg in legs {
            sum += leg.await.unwrap();
        }
        sum
    });
    assert_eq!(sum, 199 * 200 / 2);
    assert_eq!(pool.workers(), 1);
}

#[test]
fn a_caller_that_gives_up_while_queued_leaves_its_leg_unrun() {
    let rt = current_thread_runtime();
    let pool = pool(1, Duration::from_secs(60));
    let ran = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let busy = tokio::spawn({
            let pool = pool.clone();
            async move {
                pool.run(|| std::thread::sleep(Duration::from_millis(100)))
                    .await
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let queued = {
            let ran = ran.clone();
            pool.run(move || ran.fetch_add(1, Ordering::SeqCst))
        };
        // Still queued when the caller gives up.
        let timed_out = tokio::time::timeout(Duration::from_millis(10), queued).await;
        assert!(timed_out.is_err());
        busy.await.unwrap().unwrap();
        assert_eq!(pool.run(|| 5).await, Ok(5));
    });
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[test]
fn idle_workers_exit_after_the_keep_alive() {
    let rt = current_thread_runtime();
    let pool = pool(4, Duration::from_millis(50));
    let busy = rt.block_on(async {
        let a = pool.run(|| std::thread::sleep(Duration::from_millis(30)));
        let b = pool.run(|| std::thread::sleep(Duration::from_millis(30)));
        tokio::join!(a, b)
    });
    assert_eq!(busy, (Ok(()), Ok(())));
    assert_eq!(pool.workers(), 2);
    let until = Instant::now() + Duration::from_secs(10);
    while pool.workers() > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!((pool.workers(), pool.idle_workers()), (0, 0));
    // The pool starts a worker again on demand.
    assert_eq!(rt.block_on(pool.run(|| 7)), Ok(7));
    assert_eq!(pool.workers(), 1);
}

/// Two guests spin until their deadline on the only two workers; a third exec waits for a
/// worker (the executor keeps running meanwhile), then stops at once because its deadline,
/// fixed before it queued, has passed: queue time counts against the deadline.
#[test]
fn a_leg_that_queued_past_its_deadline_stops_at_once_and_the_executor_stays_free() {
    let runtime = Runtime::global().unwrap();
    let limits = VmLimits::default();
    let pool = pool(2, Duration::from_secs(60));
    let rt = current_thread_runtime();
    let spin = |budget: LegBudget| {
        let runtime = runtime.clone();
        move || {
            let mut vm = runtime.fresh_vm(&limits).unwrap();
            let started = Instant::now();
            let outcome = vm
                .start("while (true) {}", r#"{"tools":[]}"#, &limits, &budget)
                .map(|r| r.state);
            (started, Instant::now(), outcome)
        }
    };
    let (first, second, third, ticks) = rt.block_on(async {
        let submit = |work| {
            let pool = pool.clone();
            tokio::spawn(async move { pool.run(work).await })
        };
        let busy_budget = LegBudget::new(Duration::from_millis(600), AbortHandle::new());
        let first = submit(spin(busy_budget.clone()));
        let second = submit(spin(busy_budget.clone()));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let queued_budget = LegBudget::new(Duration::from_millis(150), AbortHandle::new());
        let deadline = queued_budget.soft_deadline;
        let third = submit(spin(queued_budget));
        // The executor is free while both workers spin and the third leg waits.
        let mut ticks = 0;
        while !first.is_finished() {
            tokio::time::sleep(Duration::from_millis(10)).await;
            ticks += 1;
        }
        let third = third.await.unwrap().unwrap();
        (
            first.await.unwrap().unwrap(),
            second.await.unwrap().unwrap(),
            (deadline, third),
            ticks,
        )
    });
    assert_eq!(first.2, Err(VmError::Timeout));
    assert_eq!(second.2, Err(VmError::Timeout));
    let (deadline, (started, ended, outcome)) = third;
    assert_eq!(outcome, Err(VmError::Timeout));
    // It waited in the queue until past its own deadline...
    assert!(started >= deadline, "the third leg ran before its deadline");
    assert!(started >= first.1.min(second.1));
    // ...and then did not get a fresh budget: a 150 ms budget would have let it spin 150 ms.
    let ran = ended - started;
    assert!(
        ran < Duration::from_millis(150),
        "ran {ran:?} past its deadline"
    );
    // ~600 ms of spinning, 10 ms ticks: the executor was never held up for long.
    assert!(
        ticks >= 20,
        "only {ticks} ticks while the workers were busy"
    );
}
