//! Drawing a heat map: the cells, the boundaries of every level, the labels and the colour bar.

use super::*;

impl Figure for Heatmap<'_> {
    fn size(&self) -> (u32, u32) {
        (LEFT as u32 + SIDE + 170, TOP as u32 + SIDE + 70)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        let e = PlotError::draw;
        root.fill(&WHITE).map_err(e)?;
        let (lo, hi) = self.scale();
        let font = |size: f64| (FONT, size).into_font();
        root.draw(&Text::new(self.title.clone(), (LEFT, 14), font(20.0)))
            .map_err(e)?;

        let pixels = self.pixels(lo, hi);
        let image = BitMapElement::with_owned_buffer((LEFT, TOP), (SIDE, SIDE), pixels)
            .ok_or_else(|| PlotError::Draw("the heat map's pixels".into()))?;
        root.draw(&image).map_err(e)?;

        let drawn = self.drawn_levels();
        self.draw_boundaries(root, &drawn)?;
        self.draw_axes(root, &drawn)?;
        self.draw_colour_bar(root, lo, hi)?;
        self.draw_note(root, hi)
    }
}

impl Heatmap<'_> {
    /// The pixel where rank (or item) `k` starts along either side of the matrix.
    fn at(&self, k: usize) -> i32 {
        (k as f64 * SIDE as f64 / self.len() as f64).round() as i32
    }

    /// The boundaries of the groups of the levels drawn, and the frame.
    fn draw_boundaries<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        drawn: &[(&str, &[usize])],
    ) -> Result<(), PlotError> {
        let e = PlotError::draw;
        let end = SIDE as i32;
        // Group boundaries, coarsest level thickest; levels too dense to read are left out.
        for (depth, &(_, starts)) in drawn.iter().enumerate() {
            let (width, opacity) = STROKES[depth.min(STROKES.len() - 1)];
            let style = BOUNDARY.mix(opacity).stroke_width(width);
            for &k in starts {
                let p = self.at(k);
                root.draw(&PathElement::new(
                    vec![(LEFT + p, TOP), (LEFT + p, TOP + end)],
                    style,
                ))
                .map_err(e)?;
                root.draw(&PathElement::new(
                    vec![(LEFT, TOP + p), (LEFT + end, TOP + p)],
                    style,
                ))
                .map_err(e)?;
            }
        }
        root.draw(&Rectangle::new(
            [(LEFT, TOP), (LEFT + end, TOP + end)],
            BLACK.stroke_width(1),
        ))
        .map_err(e)?;

        Ok(())
    }

    /// The labels along both sides and the axis titles.
    fn draw_axes<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        drawn: &[(&str, &[usize])],
    ) -> Result<(), PlotError> {
        let e = PlotError::draw;
        let end = SIDE as i32;
        // Axis labels: the groups of a level when a topology orders the ranks (rank numbers in
        // that order look random), else at most 16 ranks; names too long for the margin lose
        // the prefix they share (said in the axis title).
        let (labels, prefix) = short_labels(self.axis_labels());
        let (mut last_y, mut last_x): (Option<i32>, Option<(i32, i32)>) = (None, None);
        for (from, to, text) in labels {
            let p = (self.at(from) + self.at(to)) / 2;
            if last_y.is_some_and(|q| p - q < LABEL_GAP) {
                continue;
            }
            last_y = Some(p);
            root.draw(&Text::new(
                text.clone(),
                (LEFT - 6, TOP + p),
                anchored(14.0, HPos::Right, VPos::Center),
            ))
            .map_err(e)?;
            // Under the matrix, only where it clears the label before it.
            let half = label_width(&text) / 2;
            if last_x.is_some_and(|(q, h)| p - half < q + h + 6) {
                continue;
            }
            last_x = Some((p, half));
            root.draw(&Text::new(
                text,
                (LEFT + p, TOP + end + 6),
                anchored(14.0, HPos::Center, VPos::Top),
            ))
            .map_err(e)?;
        }
        let mut axis = self.axis_title(drawn);
        if let Some(prefix) = prefix {
            axis = format!("{axis} (labels: names after {prefix})");
        }
        root.draw(&Text::new(
            axis,
            (LEFT + end / 2, TOP + end + 26),
            anchored(16.0, HPos::Center, VPos::Top),
        ))
        .map_err(e)?;
        let vertical =
            TextStyle::from((FONT, 16.0).into_font().transform(FontTransform::Rotate270)).pos(
                plotters::style::text_anchor::Pos::new(HPos::Center, VPos::Top),
            );
        root.draw(&Text::new(
            if self.boundaries.is_empty() {
                self.item.to_string()
            } else {
                format!("{} (topology order)", self.item)
            },
            (4, TOP + end / 2),
            vertical,
        ))
        .map_err(e)?;

        Ok(())
    }

    /// The colour bar, its ticks and unit, and what its colours mean.
    fn draw_colour_bar<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        lo: f64,
        hi: f64,
    ) -> Result<(), PlotError> {
        let e = PlotError::draw;
        let end = SIDE as i32;
        // The colour bar, low values at the bottom.
        let h = SIDE as usize;
        let mut bar = vec![0u8; BAR_W as usize * h * 3];
        for y in 0..h {
            let v = hi - (hi - lo) * y as f64 / (h - 1) as f64;
            let c = self.colour(v, lo, hi);
            for x in 0..BAR_W as usize {
                let k = (y * BAR_W as usize + x) * 3;
                bar[k..k + 3].copy_from_slice(&[c.0, c.1, c.2]);
            }
        }
        let bar = BitMapElement::with_owned_buffer((BAR_X, TOP), (BAR_W as u32, SIDE), bar)
            .ok_or_else(|| PlotError::Draw("the colour bar".into()))?;
        root.draw(&bar).map_err(e)?;
        root.draw(&Rectangle::new(
            [(BAR_X, TOP), (BAR_X + BAR_W, TOP + end)],
            BLACK.stroke_width(1),
        ))
        .map_err(e)?;
        for t in nice_ticks(lo, hi, 6) {
            let y = TOP + ((hi - t) / (hi - lo) * (SIDE - 1) as f64).round() as i32;
            root.draw(&PathElement::new(
                vec![(BAR_X + BAR_W, y), (BAR_X + BAR_W + 4, y)],
                BLACK.stroke_width(1),
            ))
            .map_err(e)?;
            root.draw(&Text::new(
                short(t),
                (BAR_X + BAR_W + 7, y),
                anchored(14.0, HPos::Left, VPos::Center),
            ))
            .map_err(e)?;
        }
        root.draw(&Text::new(
            self.unit.clone(),
            (BAR_X, TOP - 8),
            anchored(15.0, HPos::Left, VPos::Bottom),
        ))
        .map_err(e)?;
        let mut legend = vec![if self.signed {
            "red: slower in B"
        } else {
            "lower: closer"
        }];
        if self.has_gaps() {
            legend.push(if self.signed {
                "grey: not compared"
            } else {
                "grey: no value"
            });
        }
        for (k, text) in legend.into_iter().enumerate() {
            root.draw(&Text::new(
                text,
                (BAR_X, TOP + end + 6 + 18 * k as i32),
                anchored(14.0, HPos::Left, VPos::Top),
            ))
            .map_err(e)?;
        }
        Ok(())
    }

    /// The note under the title: the count, the clipping, the heat map's own note, wrapped.
    fn draw_note<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        hi: f64,
    ) -> Result<(), PlotError> {
        let e = PlotError::draw;
        let n = self.len();
        let font = |size: f64| (FONT, size).into_font();
        let clipped = if self.signed {
            format!("|{}| clipped at {}", self.unit, short(hi))
        } else if self.clip_quantile < 1.0 {
            format!(
                "values beyond the {:.0}th percentile{} ({} {}) are clipped to it",
                self.clip_quantile * 100.0,
                if self.signed { " of |value|" } else { "" },
                short(hi),
                self.unit
            )
        } else {
            "no values clipped".to_string()
        };
        let note = match &self.note {
            Some(note) => format!("{n} {}s; {clipped}; {note}", self.item),
            None => format!("{n} {}s; {clipped}", self.item),
        };
        // Wrapped to end before the unit label over the colour bar.
        let width = (BAR_X - LEFT - 12) as u32;
        let fits = |text: &str| {
            root.estimate_text_size(text, &TextStyle::from(font(NOTE_FONT)))
                .map_or(true, |(w, _)| w <= width)
        };
        for (k, line) in wrap(&note, NOTE_LINES, fits).into_iter().enumerate() {
            root.draw(&Text::new(
                line,
                (LEFT, 36 + 18 * k as i32),
                font(NOTE_FONT),
            ))
            .map_err(e)?;
        }
        Ok(())
    }
}
