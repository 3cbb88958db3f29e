use super::*;

fn building() -> Obstacle {
    // 10 m × 10 m block from (45, 45) to (55, 55), 20 m tall.
    let r = Rect {
        min_x: 45.0,
        min_y: 45.0,
        max_x: 55.0,
        max_y: 55.0,
    };
    Obstacle::from_rect(ObstacleKind::Building, r, 20.0)
}

#[test]
fn a_building_between_two_ground_antennas_blocks_them() {
    let b = building();
    let a = Vec3::new(0.0, 50.0, 1.5);
    let z = Vec3::new(100.0, 50.0, 5.0);
    assert!(b.blocks(a, z));
    assert!(b.blocks(z, a), "symmetric");
    // Beside the block: line of sight.
    assert!(!b.blocks(Vec3::new(0.0, 60.0, 1.5), Vec3::new(100.0, 60.0, 5.0)));
    // Over the roof: both antennas above 20 m.
    assert!(!b.blocks(Vec3::new(0.0, 50.0, 25.0), Vec3::new(100.0, 50.0, 21.0)));
    // Ends before the block.
    assert!(!b.blocks(a, Vec3::new(40.0, 50.0, 5.0)));
    // Diagonal through a corner region.
    assert!(b.blocks(Vec3::new(40.0, 40.0, 1.0), Vec3::new(60.0, 60.0, 1.0)));
    assert!(!b.blocks(Vec3::new(40.0, 60.0, 1.0), Vec3::new(44.0, 70.0, 1.0)));
    // Vertical segment inside the footprint.
    assert!(b.blocks(Vec3::new(50.0, 50.0, 30.0), Vec3::new(50.0, 50.0, 10.0)));
}

#[test]
fn a_segment_grazing_high_above_a_low_blocker_is_clear() {
    // A 1.6 m car between an antenna at 1.5 m and a mast at 6 m.
    let car = Obstacle {
        kind: ObstacleKind::Vehicle,
        center: Vec3::new(20.0, 0.0, 0.0),
        half_length_m: 2.25,
        half_width_m: 0.9,
        heading_rad: std::f64::consts::FRAC_PI_2,
        height_m: 1.6,
    };
    let rx = Vec3::new(0.0, 0.0, 1.5);
    let bs = Vec3::new(40.0, 0.0, 6.0);
    // The ray is at 1.5 + 4.5·0.5 = 3.75 m over the car: clear.
    assert!(!car.blocks(rx, bs));
    // Next to the receiver it blocks.
    let near = Obstacle {
        center: Vec3::new(1.5, 0.0, 0.0),
        ..car
    };
    assert!(near.blocks(rx, bs));
    // Rotated footprint: the car points along y, so it is 1.8 m wide in x
    // and 4.5 m long in y.
    let br = car.bounding_rect();
    assert!((br.max_x - br.min_x - 1.8).abs() < 1e-9);
    assert!((br.max_y - br.min_y - 4.5).abs() < 1e-9);
    assert!(near.blocks(Vec3::new(1.5, -3.0, 1.0), Vec3::new(1.5, 3.0, 1.0)));
    assert!(!near.blocks(Vec3::new(0.0, -3.0, 1.0), Vec3::new(0.0, 3.0, 1.0)));
}

#[test]
fn crossings_count_each_kind_and_skip_the_own_body() {
    let tree = Obstacle::from_rect(ObstacleKind::Tree, Rect::around(20.0, 50.0, 2.0), 8.0);
    let field = ObstacleField::new(vec![building(), tree]).unwrap();
    let car = Obstacle {
        kind: ObstacleKind::Vehicle,
        center: Vec3::new(2.0, 50.0, 0.0),
        half_length_m: 2.25,
        half_width_m: 0.9,
        heading_rad: 0.0,
        height_m: 1.6,
    };
    let a = Vec3::new(2.0, 50.0, 1.5);
    let z = Vec3::new(100.0, 50.0, 5.0);
    let c = field.crossings(a, z, &[Blocker::new(car)], &[]);
    assert_eq!((c.buildings, c.trees, c.vehicles), (1, 1, 1));
    let c = field.crossings(a, z, &[Blocker::new(car)], &[0]);
    assert_eq!((c.buildings, c.trees, c.vehicles), (1, 1, 0));
    assert!(field
        .crossings(
            Vec3::new(0.0, 90.0, 1.5),
            Vec3::new(100.0, 90.0, 5.0),
            &[],
            &[]
        )
        .is_clear());
}

#[test]
fn urban_fields_are_denser_than_rural_and_keep_streets_clear() {
    let area = Bounds::from_size(100.0, 100.0, 50.0);
    let streets = [
        Rect {
            min_x: 0.0,
            min_y: 45.0,
            max_x: 100.0,
            max_y: 55.0,
        },
        Rect {
            min_x: 45.0,
            min_y: 0.0,
            max_x: 55.0,
            max_y: 100.0,
        },
    ];
    let urban = ObstacleField::generate(&ObstacleDensity::urban(), area, &streets, 1).unwrap();
    let rural = ObstacleField::generate(&ObstacleDensity::rural(), area, &streets, 1).unwrap();
    assert!(urban.count(ObstacleKind::Building) > rural.count(ObstacleKind::Building));
    assert!(urban.count(ObstacleKind::Tree) > rural.count(ObstacleKind::Tree));
    assert_eq!(urban.count(ObstacleKind::Building), 8);
    for o in urban.obstacles().iter().chain(rural.obstacles()) {
        let r = o.bounding_rect();
        assert!(streets.iter().all(|s| !s.overlaps(&r)), "{o:?}");
        assert!(r.min_x >= 0.0 && r.max_x <= 100.0 && r.min_y >= 0.0 && r.max_y <= 100.0);
        if o.kind == ObstacleKind::Building {
            let side = r.max_x - r.min_x;
            assert!((10.0..=20.0).contains(&side), "{side}");
        }
    }
    let again = ObstacleField::generate(&ObstacleDensity::urban(), area, &streets, 1).unwrap();
    assert_eq!(urban, again);
    let other = ObstacleField::generate(&ObstacleDensity::urban(), area, &streets, 2).unwrap();
    assert_ne!(urban, other);
}

#[test]
fn bad_obstacles_and_densities_are_named() {
    let mut b = building();
    b.height_m = f64::NAN;
    let err = ObstacleField::new(vec![building(), b]).unwrap_err();
    assert_eq!(err.field, "obstacles[1].height_m");
    let d = ObstacleDensity {
        building_side_m: [20.0, 10.0],
        ..ObstacleDensity::urban()
    };
    let area = Bounds::from_size(100.0, 100.0, 10.0);
    assert_eq!(
        ObstacleField::generate(&d, area, &[], 1).unwrap_err().field,
        "density.building_side_m"
    );
    let flat = Bounds::from_size(0.0, 100.0, 10.0);
    assert_eq!(
        ObstacleField::generate(&ObstacleDensity::rural(), flat, &[], 1)
            .unwrap_err()
            .field,
        "area"
    );
}

#[test]
fn fields_read_from_files_are_validated() {
    let json = r#"[{"kind": "tree", "center": {"x": 1.0, "y": 2.0, "z": 0.0},
        "half_length_m": 2.0, "half_width_m": 2.0, "heading_rad": 0.0, "height_m": 8.0}]"#;
    let f: ObstacleField = serde_json::from_str(json).unwrap();
    assert_eq!(f.count(ObstacleKind::Tree), 1);
    let back = serde_json::to_string(&f).unwrap();
    assert_eq!(serde_json::from_str::<ObstacleField>(&back).unwrap(), f);
    let bad = json.replace("8.0", "-1.0");
    let err = serde_json::from_str::<ObstacleField>(&bad).unwrap_err();
    assert!(err.to_string().contains("obstacles[0].height_m"), "{err}");
}

/// The full scan the grid index replaces (issue 40): every blocker tested.
fn scan(blockers: &[Blocker], a: Vec3, b: Vec3, skip: &[usize]) -> Crossings {
    let mut c = Crossings::default();
    let seg = Rect::spanning(a, b);
    for (i, o) in blockers.iter().enumerate() {
        if !skip.contains(&i) && o.blocks_within(&seg, a, b) {
            c.add(o.obstacle().kind);
        }
    }
    c
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

    /// Through the grid, every segment crosses exactly what a scan of
    /// every blocker finds — each blocker counted once, wherever it
    /// spans several cells — for rotated footprints of mixed sizes, and
    /// segments of every direction (axis-parallel and degenerate ones
    /// too, and ones leaving the grid or ending on a cell boundary).
    #[test]
    fn the_grid_index_finds_what_a_full_scan_finds(
        obs in proptest::collection::vec(
            (0.0f64..300.0, 0.0f64..300.0, 0.5f64..20.0, 0.5f64..20.0, 0.0f64..6.3, 0.5f64..30.0, 0u8..3),
            1..80,
        ),
        segs in proptest::collection::vec(
            (-50.0f64..350.0, -50.0f64..350.0, 0.0f64..40.0, -50.0f64..350.0, -50.0f64..350.0, 0.0f64..40.0, 0u8..4),
            1..30,
        ),
        skip in proptest::collection::vec(0usize..80, 0..3),
    ) {
        let blockers: Vec<Blocker> = obs
            .iter()
            .map(|&(x, y, l, w, h, height, k)| {
                Blocker::new(Obstacle {
                    kind: [ObstacleKind::Building, ObstacleKind::Tree, ObstacleKind::Vehicle][k as usize],
                    center: Vec3::new(x, y, 0.0),
                    half_length_m: l,
                    half_width_m: w,
                    heading_rad: h,
                    height_m: height,
                })
            })
            .collect();
        let index = BlockerIndex::new(blockers.clone());
        let empty = ObstacleField::default();
        for &(ax, ay, az, bx, by, bz, shape) in &segs {
            let a = Vec3::new(ax, ay, az);
            let mut b = Vec3::new(bx, by, bz);
            match shape {
                1 => b.y = a.y,        // along x
                2 => b.x = a.x,        // along y
                3 => b = Vec3::new(a.x, a.y, bz), // vertical
                _ => {}
            }
            let want = scan(&blockers, a, b, &skip);
            proptest::prop_assert_eq!(empty.crossings_indexed(a, b, &index, &skip), want);
            // The static side of a field: the same.
            let field = ObstacleField::new(blockers.iter().map(|o| *o.obstacle()).collect()).unwrap();
            proptest::prop_assert_eq!(field.crossings(a, b, &[], &[]), scan(&blockers, a, b, &[]));
        }
    }
}

#[test]
fn segments_along_cell_boundaries_are_counted_once() {
    // Unit squares on a lattice: cells are 2 m wide, so segments along
    // x = 2k and y = 2k run on cell boundaries and corners.
    let blockers: Vec<Blocker> = (0..10)
        .flat_map(|i| (0..10).map(move |j| (i, j)))
        .map(|(i, j)| {
            let r = Rect::around(f64::from(i) * 4.0, f64::from(j) * 4.0, 0.5);
            Blocker::new(Obstacle::from_rect(ObstacleKind::Building, r, 10.0))
        })
        .collect();
    let mut blockers = blockers;
    // A body at a nonsense position: kept out of the grid, still tested.
    blockers.push(Blocker::new(Obstacle::from_rect(
        ObstacleKind::Vehicle,
        Rect::around(f64::NAN, 1.0, 1.0),
        2.0,
    )));
    let index = BlockerIndex::new(blockers.clone());
    let empty = ObstacleField::default();
    for (a, b) in [
        (Vec3::new(-0.5, -0.5, 1.0), Vec3::new(36.5, 36.5, 1.0)),
        (Vec3::new(0.0, -1.0, 1.0), Vec3::new(0.0, 40.0, 1.0)),
        (Vec3::new(-1.0, 8.0, 1.0), Vec3::new(40.0, 8.0, 1.0)),
        (Vec3::new(36.5, -0.5, 1.0), Vec3::new(-0.5, 36.5, 1.0)),
        (Vec3::new(4.0, 4.0, 1.0), Vec3::new(4.0, 4.0, 2.0)),
    ] {
        assert_eq!(
            empty.crossings_indexed(a, b, &index, &[]),
            scan(&blockers, a, b, &[]),
            "{a:?} → {b:?}"
        );
    }
    // The diagonal crosses the ten squares on it.
    let c = empty.crossings_indexed(
        Vec3::new(-0.5, -0.5, 1.0),
        Vec3::new(36.5, 36.5, 1.0),
        &index,
        &[],
    );
    assert_eq!(c.buildings, 10);
}
