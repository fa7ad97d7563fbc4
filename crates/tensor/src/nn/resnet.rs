//! ResNet-18/34/50/101/152 backbones with torchvision's layout and variable names.
//!
//! The architecture is first written down as a [`ResNetPlan`] (every convolution with its
//! name, channels, kernel, stride and padding, in forward order). The network is built from the
//! plan and the FLOP counter walks the same plan, so the two can never disagree. Variable names
//! follow torchvision (`conv1`, `bn1`, `layer{1..4}.{i}.conv{k}`, `.bn{k}`,
//! `.downsample.{0,1}`), so ImageNet weights exported from torchvision load directly.
//!
//! `width` scales every stage (64 = torchvision); the `small` stem replaces the 7x7/stride-2
//! convolution and max-pool with one 3x3/stride-1 convolution for images of 32-64 px.
//!
//! The backbone runs channels-last (NHWC strides under the NCHW shape): [`ResNet::forward_t`]
//! lays its input out that way, and every convolution, BatchNorm and ReLU after it keeps the
//! layout. oneDNN's CPU convolutions work in NHWC, so the default NCHW layout costs a reorder
//! around every convolution, forward and backward: measured on the 2-core VM, a width-16
//! ResNet-18 training step took 1.3x as long in NCHW (PyTorch 2.11, 64 px batch 64: 139-144
//! against 180-186 images/s; 32 px batch 128: 582 against 700-774). On CUDA it is the layout
//! tensor cores want under bf16. The weights keep their NCHW layout (converting the input alone
//! gave the same speed), so checkpoints are unchanged. Results differ from an NCHW run in the
//! last bits (the summation order inside the convolutions), which is why the kinds that run
//! the network moved their `IMPL_VERSION` with this change.

use tch::nn::{self, ModuleT};
use tch::Tensor;

use super::config::{NetConfig, Stem};

/// One convolution (always followed by a BatchNorm of the same prefix) in the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvSpec {
    /// Variable path of the convolution (`layer1.0.conv1`).
    pub name: String,
    /// Variable path of its BatchNorm (`layer1.0.bn1`).
    pub bn_name: String,
    /// Input channels.
    pub cin: i64,
    /// Output channels.
    pub cout: i64,
    /// Kernel size (square).
    pub kernel: i64,
    /// Stride.
    pub stride: i64,
    /// Zero padding.
    pub padding: i64,
}

impl ConvSpec {
    fn new(prefix: &str, idx: &str, cin: i64, cout: i64, kernel: i64, stride: i64) -> Self {
        let sep = if prefix.is_empty() { "" } else { "." };
        ConvSpec {
            name: format!("{prefix}{sep}conv{idx}"),
            bn_name: format!("{prefix}{sep}bn{idx}"),
            cin,
            cout,
            kernel,
            stride,
            padding: kernel / 2,
        }
    }

    /// Output side length for an input of side `size`.
    pub fn out_size(&self, size: i64) -> i64 {
        (size + 2 * self.padding - self.kernel) / self.stride + 1
    }

    /// Multiply-accumulates of this convolution on an input of side `size`.
    pub fn macs(&self, size: i64) -> f64 {
        self.macs_rect(size, size)
    }

    /// Multiply-accumulates of this convolution on a `height x width` input.
    pub fn macs_rect(&self, height: i64, width: i64) -> f64 {
        let (out_h, out_w) = (self.out_size(height) as f64, self.out_size(width) as f64);
        out_h * out_w * (self.cout * self.cin * self.kernel * self.kernel) as f64
    }
}

/// One residual block: its main-path convolutions and an optional projection shortcut.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockPlan {
    /// Main path, in order (2 for basic blocks, 3 for bottlenecks).
    pub convs: Vec<ConvSpec>,
    /// The `downsample` shortcut (1x1 convolution + BatchNorm), when shape changes.
    pub downsample: Option<ConvSpec>,
}

/// The whole backbone, convolution by convolution.
#[derive(Debug, Clone, PartialEq)]
pub struct ResNetPlan {
    /// `conv1`/`bn1`.
    pub stem: ConvSpec,
    /// Whether the 3x3/stride-2 max-pool follows the stem.
    pub maxpool: bool,
    /// Every block of `layer1` .. `layer4`, in order.
    pub blocks: Vec<BlockPlan>,
    /// Channels of the last feature map.
    pub out_channels: i64,
}

impl ResNetPlan {
    /// The plan of the network `cfg` describes.
    pub fn new(cfg: &NetConfig) -> Self {
        let w = cfg.width;
        let stem = match cfg.stem {
            Stem::Imagenet => ConvSpec::new("", "1", 3, w, 7, 2),
            Stem::Small => ConvSpec::new("", "1", 3, w, 3, 1),
        };
        let expansion = cfg.arch.expansion();
        let mut inplanes = w;
        let mut blocks = Vec::new();
        for (stage, &count) in cfg.arch.blocks().iter().enumerate() {
            let planes = w << stage;
            let stage_stride = if stage == 0 { 1 } else { 2 };
            for i in 0..count {
                let prefix = format!("layer{}.{i}", stage + 1);
                let stride = if i == 0 { stage_stride } else { 1 };
                let convs = if cfg.arch.bottleneck() {
                    vec![
                        ConvSpec::new(&prefix, "1", inplanes, planes, 1, 1),
                        ConvSpec::new(&prefix, "2", planes, planes, 3, stride),
                        ConvSpec::new(&prefix, "3", planes, planes * expansion, 1, 1),
                    ]
                } else {
                    vec![
                        ConvSpec::new(&prefix, "1", inplanes, planes, 3, stride),
                        ConvSpec::new(&prefix, "2", planes, planes, 3, 1),
                    ]
                };
                let downsample =
                    (stride != 1 || inplanes != planes * expansion).then(|| ConvSpec {
                        name: format!("{prefix}.downsample.0"),
                        bn_name: format!("{prefix}.downsample.1"),
                        cin: inplanes,
                        cout: planes * expansion,
                        kernel: 1,
                        stride,
                        padding: 0,
                    });
                blocks.push(BlockPlan { convs, downsample });
                inplanes = planes * expansion;
            }
        }
        ResNetPlan {
            stem,
            maxpool: cfg.stem == Stem::Imagenet,
            blocks,
            out_channels: inplanes,
        }
    }

    /// Multiply-accumulates of every convolution for one square input of side `resolution`,
    /// and the side of the last feature map.
    pub fn conv_macs(&self, resolution: i64) -> (f64, i64) {
        let (macs, size, _) = self.conv_macs_rect(resolution, resolution);
        (macs, size)
    }

    /// Multiply-accumulates of every convolution for one `height x width` input, and the
    /// height and width of the last feature map.
    pub fn conv_macs_rect(&self, height: i64, width: i64) -> (f64, i64, i64) {
        let mut macs = self.stem.macs_rect(height, width);
        let (mut h, mut w) = (self.stem.out_size(height), self.stem.out_size(width));
        if self.maxpool {
            (h, w) = (maxpool_out(h), maxpool_out(w));
        }
        for block in &self.blocks {
            let (in_h, in_w) = (h, w);
            for conv in &block.convs {
                macs += conv.macs_rect(h, w);
                (h, w) = (conv.out_size(h), conv.out_size(w));
            }
            if let Some(ds) = &block.downsample {
                macs += ds.macs_rect(in_h, in_w);
            }
        }
        (macs, h, w)
    }
}

fn maxpool_out(size: i64) -> i64 {
    (size + 2 - 3) / 2 + 1
}

/// A convolution without bias followed by its BatchNorm.
#[derive(Debug)]
struct ConvBn {
    conv: nn::Conv2D,
    bn: nn::BatchNorm,
}

impl ConvBn {
    fn new(root: &nn::Path, spec: &ConvSpec) -> Self {
        let conv_cfg = nn::ConvConfig {
            stride: spec.stride,
            padding: spec.padding,
            bias: false,
            // torchvision: kaiming_normal_(mode="fan_out", nonlinearity="relu").
            ws_init: nn::Init::Kaiming {
                dist: nn::init::NormalOrUniform::Normal,
                fan: nn::init::FanInOut::FanOut,
                non_linearity: nn::init::NonLinearity::ReLU,
            },
            ..Default::default()
        };
        let bn_cfg = nn::BatchNormConfig {
            ws_init: nn::Init::Const(1.0),
            bs_init: nn::Init::Const(0.0),
            ..Default::default()
        };
        ConvBn {
            conv: nn::conv2d(
                sub_path(root, &spec.name),
                spec.cin,
                spec.cout,
                spec.kernel,
                conv_cfg,
            ),
            bn: nn::batch_norm2d(sub_path(root, &spec.bn_name), spec.cout, bn_cfg),
        }
    }

    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        xs.apply(&self.conv).apply_t(&self.bn, train)
    }
}

/// `root / "a" / "b" / "c"` for a dotted name `a.b.c`.
fn sub_path<'a>(root: &nn::Path<'a>, dotted: &str) -> nn::Path<'a> {
    let mut parts = dotted.split('.');
    let first = root.sub(parts.next().unwrap_or_default());
    parts.fold(first, |p, part| p / part)
}

#[derive(Debug)]
struct Block {
    convs: Vec<ConvBn>,
    downsample: Option<ConvBn>,
}

impl Block {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let last = self.convs.len() - 1;
        let mut ys = xs.shallow_clone();
        for (i, conv) in self.convs.iter().enumerate() {
            ys = conv.forward_t(&ys, train);
            if i != last {
                ys = ys.relu_();
            }
        }
        let shortcut = match &self.downsample {
            Some(ds) => ds.forward_t(xs, train),
            None => xs.shallow_clone(),
        };
        (ys + shortcut).relu_()
    }
}

/// A ResNet backbone: image batch `[B, 3, H, W]` to the last feature map `[B, C, h, w]`.
#[derive(Debug)]
pub struct ResNet {
    stem: ConvBn,
    maxpool: bool,
    blocks: Vec<Block>,
    plan: ResNetPlan,
}

impl ResNet {
    /// Creates the variables under `root` (torchvision names) with torchvision's initialisation.
    pub fn new(root: &nn::Path, cfg: &NetConfig) -> Self {
        let plan = ResNetPlan::new(cfg);
        let blocks = plan
            .blocks
            .iter()
            .map(|b| Block {
                convs: b.convs.iter().map(|c| ConvBn::new(root, c)).collect(),
                downsample: b.downsample.as_ref().map(|c| ConvBn::new(root, c)),
            })
            .collect();
        ResNet {
            stem: ConvBn::new(root, &plan.stem),
            maxpool: plan.maxpool,
            blocks,
            plan,
        }
    }

    /// The plan the network was built from.
    pub fn plan(&self) -> &ResNetPlan {
        &self.plan
    }

    /// Channels of the output feature map.
    pub fn out_channels(&self) -> i64 {
        self.plan.out_channels
    }
}

/// `xs` `[B, C, H, W]` with channels-last strides (a copy unless it already has them).
pub fn channels_last(xs: &Tensor) -> Tensor {
    xs.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2])
}

impl ModuleT for ResNet {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let mut ys = self.stem.forward_t(&channels_last(xs), train).relu_();
        if self.maxpool {
            ys = ys.max_pool2d([3, 3], [2, 2], [1, 1], [1, 1], false);
        }
        for block in &self.blocks {
            ys = block.forward_t(&ys, train);
        }
        ys
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::config::{Arch, Pool};

    fn cfg(arch: Arch, width: i64, stem: Stem) -> NetConfig {
        NetConfig {
            arch,
            width,
            stem,
            pool: Pool::Gem,
            embed_dim: 16,
            gem_p: 3.0,
            pool_l2n: true,
            embed_relu: false,
        }
    }

    #[test]
    fn variable_names_and_shapes_follow_torchvision() {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let net = ResNet::new(&vs.root(), &cfg(Arch::Resnet50, 64, Stem::Imagenet));
        let vars = vs.variables();
        assert_eq!(vars["conv1.weight"].size(), [64, 3, 7, 7]);
        assert_eq!(vars["bn1.running_var"].size(), [64]);
        assert_eq!(vars["layer1.0.conv3.weight"].size(), [256, 64, 1, 1]);
        assert_eq!(vars["layer1.0.downsample.0.weight"].size(), [256, 64, 1, 1]);
        assert_eq!(vars["layer1.0.downsample.1.weight"].size(), [256]);
        assert_eq!(vars["layer4.2.conv2.weight"].size(), [512, 512, 3, 3]);
        assert!(!vars.contains_key("layer1.1.downsample.0.weight"));
        // 1 stem + 16 bottlenecks x 3 + 4 downsample convolutions.
        let convs = vars
            .keys()
            .filter(|k| k.ends_with("weight") && vars[*k].dim() == 4)
            .count();
        assert_eq!(convs, 53);
        assert_eq!(net.out_channels(), 2048);
        let trainable: i64 = vs
            .trainable_variables()
            .iter()
            .map(|t| t.numel() as i64)
            .sum();
        // torchvision resnet50 has 25,557,032 parameters, of which fc holds 2,049,000.
        assert_eq!(trainable, 25_557_032 - 2_049_000);
    }

    /// Trainable parameters of a width-64 ImageNet-stem backbone.
    fn parameters(arch: Arch) -> (i64, std::collections::HashMap<String, Tensor>) {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        ResNet::new(&vs.root(), &cfg(arch, 64, Stem::Imagenet));
        let count = vs
            .trainable_variables()
            .iter()
            .map(|t| t.numel() as i64)
            .sum();
        (count, vs.variables())
    }

    #[test]
    fn resnet101_and_152_match_torchvision() {
        // torchvision resnet101: 44,549,160 parameters; resnet152: 60,192,808; each with a
        // 2048 x 1000 fc (2,049,000 with its bias), which the backbone does not have.
        let (r101, vars) = parameters(Arch::Resnet101);
        assert_eq!(r101, 44_549_160 - 2_049_000);
        // torchvision's state-dict names: layer3 holds 23 blocks, layer3.22 the last.
        assert_eq!(vars["layer3.22.conv3.weight"].size(), [1024, 256, 1, 1]);
        assert_eq!(vars["layer3.22.bn3.running_mean"].size(), [1024]);
        assert!(!vars.contains_key("layer3.23.conv1.weight"));
        assert_eq!(
            vars["layer4.0.downsample.0.weight"].size(),
            [2048, 1024, 1, 1]
        );
        assert_eq!(vars["layer4.2.conv2.weight"].size(), [512, 512, 3, 3]);
        let (r152, vars) = parameters(Arch::Resnet152);
        assert_eq!(r152, 60_192_808 - 2_049_000);
        assert_eq!(vars["layer2.7.conv3.weight"].size(), [512, 128, 1, 1]);
        assert_eq!(vars["layer3.35.conv2.weight"].size(), [256, 256, 3, 3]);
        assert!(!vars.contains_key("layer2.8.conv1.weight"));
        assert!(!vars.contains_key("layer3.36.conv1.weight"));
        // 1 stem + (3 + 8 + 36 + 3) bottlenecks x 3 + 4 downsample convolutions.
        let convs = vars.values().filter(|t| t.dim() == 4).count();
        assert_eq!(convs, 1 + 50 * 3 + 4);
    }

    #[test]
    fn resnet18_parameter_count_matches_torchvision() {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        ResNet::new(&vs.root(), &cfg(Arch::Resnet18, 64, Stem::Imagenet));
        let trainable: i64 = vs
            .trainable_variables()
            .iter()
            .map(|t| t.numel() as i64)
            .sum();
        // torchvision resnet18: 11,689,512 parameters, fc 513,000.
        assert_eq!(trainable, 11_689_512 - 513_000);
    }

    #[test]
    fn the_backbone_runs_channels_last_and_computes_what_nchw_computes() {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let net = ResNet::new(&vs.root(), &cfg(Arch::Resnet18, 8, Stem::Small));
        let xs = Tensor::randn([2, 3, 16, 16], tch::kind::FLOAT_CPU);
        let cl = channels_last(&xs);
        assert_eq!(cl.size(), xs.size());
        assert_eq!(cl.stride(), [3 * 16 * 16, 1, 16 * 3, 3]);
        assert!(cl.equal(&xs));
        let ys = tch::no_grad(|| net.forward_t(&xs, false));
        // The output keeps the layout: C is the fastest-moving dimension.
        assert_eq!(ys.stride()[1], 1);
        // The same numbers as the plain NCHW layers, to float rounding.
        let mut nchw = net.stem.forward_t(&xs, false).relu_();
        for block in &net.blocks {
            nchw = block.forward_t(&nchw, false);
        }
        let nchw = nchw.contiguous();
        assert_eq!(nchw.stride()[3], 1);
        assert!(ys.allclose(&nchw, 1e-4, 1e-5, false));
    }

    #[test]
    fn small_stem_keeps_resolution_until_layer2() {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let net = ResNet::new(&vs.root(), &cfg(Arch::Resnet18, 8, Stem::Small));
        let xs = Tensor::randn([2, 3, 32, 32], (tch::Kind::Float, tch::Device::Cpu));
        let ys = net.forward_t(&xs, false);
        assert_eq!(ys.size(), [2, 64, 4, 4]);
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let net = ResNet::new(&vs.root(), &cfg(Arch::Resnet34, 8, Stem::Imagenet));
        let ys = net.forward_t(&Tensor::randn([1, 3, 64, 64], tch::kind::FLOAT_CPU), false);
        assert_eq!(ys.size(), [1, 64, 2, 2]);
        assert_eq!(net.plan().conv_macs(64).1, 2);
    }
}
