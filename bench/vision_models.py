"""ResNet-18/50 and MobileNetV2 as torchvision defines them, for machines without torchvision.

Same layers in the same order (so a torchvision state_dict's tensors map one to one), same
strides (ResNet v1.5: the stride is on the 3x3 of a bottleneck), same classifier heads.
"""

import torch
from torch import nn


def conv_bn(cin, cout, k, stride=1, groups=1, act=nn.ReLU):
    layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, act(inplace=True)) if act else nn.Sequential(*layers)


class ResBlock(nn.Module):
    def __init__(self, cin, width, stride, bottleneck):
        super().__init__()
        cout = width * (4 if bottleneck else 1)
        if bottleneck:
            self.body = nn.Sequential(conv_bn(cin, width, 1), conv_bn(width, width, 3, stride),
                                      conv_bn(width, cout, 1, act=None))
        else:
            self.body = nn.Sequential(conv_bn(cin, width, 3, stride),
                                      conv_bn(width, cout, 3, act=None))
        self.down = conv_bn(cin, cout, 1, stride, act=None) if stride != 1 or cin != cout \
            else None
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        skip = x if self.down is None else self.down(x)
        return self.relu(self.body(x) + skip)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = [conv_bn(cin, hidden, 1, act=nn.ReLU6)] if expand != 1 else []
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.ReLU6),
                   conv_bn(hidden, cout, 1, act=None)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class Classifier(nn.Module):
    def __init__(self, features, channels, dropout):
        super().__init__()
        self.features = nn.Sequential(*features)
        self.pool = nn.AdaptiveAvgPool2d(1)
        head = nn.Linear(channels, 1000)
        self.fc = nn.Sequential(nn.Dropout(dropout), head) if dropout else head

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


def fallback_model(name):
    """resnet18, resnet50 or mobilenet_v2 with random weights."""
    if name in ("resnet18", "resnet50"):
        bottleneck = name == "resnet50"
        blocks = (3, 4, 6, 3) if bottleneck else (2, 2, 2, 2)
        feats = [conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)]
        cin = 64
        for stage, (count, width) in enumerate(zip(blocks, (64, 128, 256, 512))):
            for b in range(count):
                feats.append(ResBlock(cin, width, 2 if b == 0 and stage > 0 else 1, bottleneck))
                cin = width * (4 if bottleneck else 1)
        return Classifier(feats, cin, 0.0)
    # MobileNetV2: (expansion t, channels c, repeats n, first stride s)
    feats = [conv_bn(3, 32, 3, 2, act=nn.ReLU6)]
    cin = 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            feats.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
            cin = c
    feats.append(conv_bn(cin, 1280, 1, act=nn.ReLU6))
    return Classifier(feats, 1280, 0.2)
