"""Image models from timm and torchvision, random weights (nothing downloaded), batch 1-2
at small resolutions, as users call them: `model = make(...).cuda().eval()` with a
batch of images, some in fp16 or bf16 (`.half()`, `.to(torch.bfloat16)`, or a function
under torch.autocast), one in channels_last.  Families the zoo lacks: depthwise convnets
(MobileNetV2, EfficientNet-B0, ConvNeXt, RegNet), windowed attention (Swin, from a small
config), DenseNet's concatenations, segmentation heads returning dicts (FCN,
DeepLabV3), and ViT-Small.  Each build() returns (model_or_callable, example_inputs).
"""
import torch

DEV = "cuda"


def images(batch, size, dtype=torch.float32):
    return torch.randn(batch, 3, size, size, device=DEV, dtype=dtype)


# ---- timm ----

def timm_convnext_atto():
    import timm
    model = timm.create_model("convnext_atto", pretrained=False, num_classes=10).cuda().eval()
    return model, (images(2, 64),)


def timm_convnext_atto_bf16():
    import timm
    model = timm.create_model("convnext_atto", pretrained=False, num_classes=10).cuda().eval().to(torch.bfloat16)
    return model, (images(1, 64, torch.bfloat16),)


def timm_efficientnet_b0():
    import timm
    model = timm.create_model("efficientnet_b0", pretrained=False, num_classes=10).cuda().eval()
    return model, (images(2, 96),)


def timm_regnetx_002():
    import timm
    model = timm.create_model("regnetx_002", pretrained=False, num_classes=10).cuda().eval()
    return model, (images(2, 64),)


def timm_swin_small_config():
    """Swin from a config with small dimensions: 64x64 images, 4x4 windows, 2 stages."""
    from timm.models.swin_transformer import SwinTransformer
    model = SwinTransformer(img_size=64, patch_size=4, in_chans=3, num_classes=10, embed_dim=32, depths=(2, 2),
                            num_heads=(2, 4), window_size=4).cuda().eval()
    return model, (images(2, 64),)


def timm_vit_small():
    import timm
    model = timm.create_model("vit_small_patch16_224", pretrained=False, img_size=64, num_classes=10).cuda().eval()
    return model, (images(2, 64),)


def timm_vit_small_fp16():
    import timm
    model = timm.create_model("vit_small_patch16_224", pretrained=False, img_size=64, num_classes=10)
    model = model.cuda().eval().half()
    return model, (images(1, 64, torch.float16),)


def timm_deit_tiny_distilled():
    """DeiT with its distillation token: two heads, averaged in eval."""
    import timm
    model = timm.create_model("deit_tiny_distilled_patch16_224", pretrained=False, img_size=64,
                              num_classes=10).cuda().eval()
    return model, (images(2, 64),)


# ---- torchvision ----

def tv_mobilenet_v2():
    from torchvision.models import mobilenet_v2
    return mobilenet_v2(weights=None, num_classes=10).cuda().eval(), (images(2, 96),)


def tv_mobilenet_v2_fp16():
    from torchvision.models import mobilenet_v2
    return mobilenet_v2(weights=None, num_classes=10).cuda().eval().half(), (images(1, 96, torch.float16),)


def tv_efficientnet_b0_autocast():
    """EfficientNet-B0 under autocast to bf16, in the function a user writes."""
    from torchvision.models import efficientnet_b0
    model = efficientnet_b0(weights=None, num_classes=10).cuda().eval()

    @torch.no_grad()
    def predict(x):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return model(x)
    return predict, (images(2, 96),)


def tv_regnet_y_400mf():
    from torchvision.models import regnet_y_400mf
    return regnet_y_400mf(weights=None, num_classes=10).cuda().eval(), (images(2, 64),)


def tv_densenet121():
    from torchvision.models import densenet121
    return densenet121(weights=None, num_classes=10).cuda().eval(), (images(1, 64),)


def tv_resnet18_channels_last_fp16():
    from torchvision.models import resnet18
    model = resnet18(weights=None, num_classes=10).cuda().eval().half().to(memory_format=torch.channels_last)
    return model, (images(2, 64, torch.float16).to(memory_format=torch.channels_last),)


def tv_fcn_resnet50():
    """Segmentation, handed over as it is: it returns an OrderedDict {"out": ...}."""
    from torchvision.models.segmentation import fcn_resnet50
    model = fcn_resnet50(weights=None, weights_backbone=None, num_classes=3, aux_loss=False).cuda().eval()
    return model, (images(1, 96),)


def tv_deeplabv3_mobilenet():
    """DeepLabV3 on MobileNetV3-Large, the user taking the dict's "out"."""
    from torchvision.models.segmentation import deeplabv3_mobilenet_v3_large
    model = deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=4).cuda().eval()
    return (lambda x: model(x)["out"]), (images(1, 128),)


PROGRAMS = {
    "timm:convnext_atto": timm_convnext_atto,
    "timm:convnext_atto_bf16": timm_convnext_atto_bf16,
    "timm:efficientnet_b0": timm_efficientnet_b0,
    "timm:regnetx_002": timm_regnetx_002,
    "timm:swin_small_config": timm_swin_small_config,
    "timm:vit_small": timm_vit_small,
    "timm:vit_small_fp16": timm_vit_small_fp16,
    "timm:deit_tiny_distilled": timm_deit_tiny_distilled,
    "tv:mobilenet_v2": tv_mobilenet_v2,
    "tv:mobilenet_v2_fp16": tv_mobilenet_v2_fp16,
    "tv:efficientnet_b0_autocast_bf16": tv_efficientnet_b0_autocast,
    "tv:regnet_y_400mf": tv_regnet_y_400mf,
    "tv:densenet121": tv_densenet121,
    "tv:resnet18_channels_last_fp16": tv_resnet18_channels_last_fp16,
    "tv:fcn_resnet50": tv_fcn_resnet50,
    "tv:deeplabv3_mobilenet": tv_deeplabv3_mobilenet,
}
