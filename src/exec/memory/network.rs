//! The sizes that set a ResNet's memory, counted from its shape alone: parameters, and the
//! values every convolution outputs for one image. The engine plans without libtorch, so this
//! walks the same layout as asymflow-tensor's `nn::resnet::ResNetPlan` (torchvision's: a
//! 7x7/2 stem and 3x3/2 max-pool, or the `small` 3x3/1 stem; stages of basic or bottleneck
//! blocks at `width << stage` channels, stride 2 from the second stage, a projection
//! shortcut where the shape changes) and the embedding head (GeM's `p`, a linear
//! projection with bias). `crates/tensor/tests/memory_estimate.rs` checks the parameter count
//! against the built network's.

/// One backbone's shape, as the network parameter group names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetShape {
    /// `resnet18` .. `resnet152`.
    pub arch: String,
    /// Base channels (`width`).
    pub width: u64,
    /// `small` stem (3x3/1, no max-pool) rather than `imagenet`.
    pub small_stem: bool,
    /// The embedding's size.
    pub embed_dim: u64,
}

/// One convolution: input channels, output channels, kernel side, stride.
#[derive(Debug, Clone, Copy)]
struct Conv {
    cin: u64,
    cout: u64,
    kernel: u64,
    stride: u64,
}

impl Conv {
    fn out(&self, side: u64) -> u64 {
        (side + 2 * (self.kernel / 2) - self.kernel) / self.stride + 1
    }
    /// Weights plus the BatchNorm's scale and shift that follow it.
    fn parameters(&self) -> u64 {
        self.cin * self.cout * self.kernel * self.kernel + 2 * self.cout
    }
}

/// Output side of the 3x3/2 max-pool with padding 1.
fn maxpool_out(side: u64) -> u64 {
    (side + 2 - 3) / 2 + 1
}

impl NetShape {
    /// `None` for an architecture this walk does not know.
    fn blocks(&self) -> Option<([u64; 4], bool)> {
        Some(match self.arch.as_str() {
            "resnet18" => ([2, 2, 2, 2], false),
            "resnet34" => ([3, 4, 6, 3], false),
            "resnet50" => ([3, 4, 6, 3], true),
            "resnet101" => ([3, 4, 23, 3], true),
            "resnet152" => ([3, 8, 36, 3], true),
            _ => return None,
        })
    }

    /// Every convolution in forward order, grouped by block; the stem first, alone.
    fn convs(&self) -> Option<Vec<Vec<Conv>>> {
        let (counts, bottleneck) = self.blocks()?;
        let w = self.width;
        let stem = if self.small_stem {
            Conv {
                cin: 3,
                cout: w,
                kernel: 3,
                stride: 1,
            }
        } else {
            Conv {
                cin: 3,
                cout: w,
                kernel: 7,
                stride: 2,
            }
        };
        let expansion = if bottleneck { 4 } else { 1 };
        let mut groups = vec![vec![stem]];
        let mut inplanes = w;
        for (stage, &count) in counts.iter().enumerate() {
            let planes = w << stage;
            for i in 0..count {
                let stride = if i == 0 && stage > 0 { 2 } else { 1 };
                let mut block = if bottleneck {
                    vec![
                        Conv {
                            cin: inplanes,
                            cout: planes,
                            kernel: 1,
                            stride: 1,
                        },
                        Conv {
                            cin: planes,
                            cout: planes,
                            kernel: 3,
                            stride,
                        },
                        Conv {
                            cin: planes,
                            cout: planes * 4,
                            kernel: 1,
                            stride: 1,
                        },
                    ]
                } else {
                    vec![
                        Conv {
                            cin: inplanes,
                            cout: planes,
                            kernel: 3,
                            stride,
                        },
                        Conv {
                            cin: planes,
                            cout: planes,
                            kernel: 3,
                            stride: 1,
                        },
                    ]
                };
                if stride != 1 || inplanes != planes * expansion {
                    // The shortcut's projection, on the block's input.
                    block.push(Conv {
                        cin: inplanes,
                        cout: planes * expansion,
                        kernel: 1,
                        stride,
                    });
                }
                groups.push(block);
                inplanes = planes * expansion;
            }
        }
        Some(groups)
    }

    /// Channels of the last feature map.
    fn feature_dim(&self) -> Option<u64> {
        let (_, bottleneck) = self.blocks()?;
        Some(self.width * 8 * if bottleneck { 4 } else { 1 })
    }

    /// Trainable parameters: convolutions, BatchNorms, GeM's `p` and the projection.
    pub fn parameters(&self) -> Option<u64> {
        let convs: u64 = self.convs()?.iter().flatten().map(Conv::parameters).sum();
        let proj = self.feature_dim()? * self.embed_dim + self.embed_dim;
        Some(convs + proj + 1)
    }

    /// Values output by every convolution (the shortcut projections included) for one
    /// `height x width` image, and the largest single output among them.
    pub(crate) fn conv_outputs(&self, height: u64, width: u64) -> Option<(u64, u64)> {
        let groups = self.convs()?;
        let stem = groups[0][0];
        let (mut h, mut w) = (stem.out(height), stem.out(width));
        let mut total = stem.cout * h * w;
        let mut largest = total;
        if !self.small_stem {
            (h, w) = (maxpool_out(h), maxpool_out(w));
        }
        for block in &groups[1..] {
            let (in_h, in_w) = (h, w);
            for (i, conv) in block.iter().enumerate() {
                let projection = i == block.len() - 1 && block.len() > main_path(block);
                let (oh, ow) = if projection {
                    (conv.out(in_h), conv.out(in_w))
                } else {
                    let out = (conv.out(h), conv.out(w));
                    (h, w) = out;
                    out
                };
                let values = conv.cout * oh * ow;
                total += values;
                largest = largest.max(values);
            }
        }
        Some((total, largest))
    }
}

/// Convolutions on a block's main path (2 basic, 3 bottleneck); a third or fourth is the
/// shortcut's projection.
fn main_path(block: &[Conv]) -> usize {
    // A basic block's convolutions are all 3x3; a bottleneck's first is 1x1.
    if block[0].kernel == 1 {
        3
    } else {
        2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(arch: &str, width: u64) -> NetShape {
        NetShape {
            arch: arch.into(),
            width,
            small_stem: false,
            embed_dim: 512,
        }
    }

    #[test]
    fn parameters_match_torchvision_backbones() {
        // torchvision's counts without the 1000-class fc (resnet18: 11,689,512 - 513,000;
        // resnet50: 25,557,032 - 2,049,000), plus this head: 512 x feature_dim + 512 + GeM's p.
        let head = |features: u64| features * 512 + 512 + 1;
        assert_eq!(
            net("resnet18", 64).parameters(),
            Some(11_176_512 + head(512))
        );
        assert_eq!(
            net("resnet50", 64).parameters(),
            Some(23_508_032 + head(2048))
        );
        assert_eq!(net("vgg16", 64).parameters(), None);
    }

    #[test]
    fn resnet50_outputs_11_million_values_per_224_px_image() {
        // docs/benchmarks.md, counted with forward hooks: 11.1 M values at 224 px.
        let (total, largest) = net("resnet50", 64).conv_outputs(224, 224).unwrap();
        assert!((11_000_000..11_300_000).contains(&total), "{total}");
        // The stem's 64 x 112 x 112 and layer1's 256 x 56 x 56 outputs are the largest.
        assert_eq!(largest, 256 * 56 * 56);
        let (at_448, _) = net("resnet50", 64).conv_outputs(448, 448).unwrap();
        assert_eq!(at_448, 4 * total);
    }
}
