// The dmabuf carrier's plane layouts per mode (offload/carrier.hpp): pure arithmetic, no
// GPU. The guest test (vm-ferryd-kms-offload-carrier-modes) crosses real buffers.

#include <drm_fourcc.h>
#include <gtest/gtest.h>

#include "offload/carrier.hpp"

namespace ferry::offload {
namespace {

TEST(CarrierPlanes, YuvModesUseOnePlaneFormatPerPayloadPlane) {
  auto nv12 = carrier_planes(TransferMode::nv12, 201, 151);
  ASSERT_EQ(nv12.size(), 2u);
  EXPECT_EQ(nv12[0].fourcc, uint32_t(DRM_FORMAT_R8));
  EXPECT_EQ(nv12[1].fourcc, uint32_t(DRM_FORMAT_GR88));
  EXPECT_EQ(nv12[1].width, 101);  // chroma rounds up
  EXPECT_EQ(nv12[1].height, 76);
  auto p010 = carrier_planes(TransferMode::p010, 200, 150);
  ASSERT_EQ(p010.size(), 2u);
  EXPECT_EQ(p010[0].fourcc, uint32_t(DRM_FORMAT_R16));
  EXPECT_EQ(p010[1].fourcc, uint32_t(DRM_FORMAT_GR1616));
  EXPECT_EQ(p010[1].width, 100);
  EXPECT_EQ(p010[1].height, 75);
  auto yuv444 = carrier_planes(TransferMode::yuv444, 200, 150);
  ASSERT_EQ(yuv444.size(), 3u);
  for (const CarrierPlane& p : yuv444) {
    EXPECT_EQ(p.fourcc, uint32_t(DRM_FORMAT_R8));
    EXPECT_EQ(p.width, 200);
    EXPECT_EQ(p.height, 150);
  }
}

TEST(CarrierPlanes, TilesAtlasHoldsEveryTileAndItsIndexBelow) {
  // 200 x 150 in 32-px tiles: 7 x 5 = 35 tiles; slots 224 x 160, 35 indices fit one row.
  auto a = carrier_planes(TransferMode::tiles, 200, 150);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].fourcc, uint32_t(DRM_FORMAT_ABGR8888));
  EXPECT_EQ(a[0].width, 224);
  EXPECT_EQ(a[0].height, 161);
  // 3840 x 2160 in 8-px tiles: 480 x 270 tiles = 129 600 indices in rows of 3 840.
  auto b = carrier_planes(TransferMode::tiles, 3840, 2160, 8);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].width, 3840);
  EXPECT_EQ(b[0].height, 2160 + 34);  // ceil(129600 / 3840) = 34
}

TEST(CarrierPlanes, ModesTheCarrierDoesNotTakeHaveNoPlanes) {
  EXPECT_TRUE(carrier_planes(TransferMode::tiles_nv12, 200, 150).empty());
  EXPECT_TRUE(carrier_planes(TransferMode::automatic, 200, 150).empty());
  EXPECT_TRUE(carrier_planes(TransferMode::tiles, 200, 150, 0).empty());
}

}  // namespace
}  // namespace ferry::offload
