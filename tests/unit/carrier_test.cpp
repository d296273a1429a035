// The dmabuf carrier's plane layouts per mode (offload/carrier.hpp): pure arithmetic, no
// GPU. The guest tests (vm-ferryd-kms-offload-carrier-yuv, -tiles) cross real buffers.

#include <drm_fourcc.h>
#include <gtest/gtest.h>

#include <vector>

#include "offload/carrier.hpp"

namespace ferry::offload {
namespace {

void expect_planes(const std::vector<CarrierPlane>& got, const std::vector<CarrierPlane>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("plane " + std::to_string(i));
    EXPECT_EQ(got[i].fourcc, want[i].fourcc);
    EXPECT_EQ(got[i].width, want[i].width);
    EXPECT_EQ(got[i].height, want[i].height);
  }
}

TEST(CarrierPlanes, EachModeUsesOnePlaneFormatPerPayloadPlane) {
  // rgb in the byte order KMS primary planes list, so it can be scanned out.
  expect_planes(carrier_planes(TransferMode::rgb, 200, 150), {{DRM_FORMAT_ARGB8888, 200, 150}});
  // Chroma rounds up.
  expect_planes(carrier_planes(TransferMode::nv12, 201, 151),
                {{DRM_FORMAT_R8, 201, 151}, {DRM_FORMAT_GR88, 101, 76}});
  expect_planes(carrier_planes(TransferMode::p010, 200, 150),
                {{DRM_FORMAT_R16, 200, 150}, {DRM_FORMAT_GR1616, 100, 75}});
  expect_planes(carrier_planes(TransferMode::yuv444, 200, 150),
                {{DRM_FORMAT_R8, 200, 150}, {DRM_FORMAT_R8, 200, 150}, {DRM_FORMAT_R8, 200, 150}});
}

TEST(CarrierPlanes, TilesAtlasHoldsEveryTileAndItsIndexBelow) {
  // 200 x 150 in 32-px tiles: 7 x 5 = 35 tiles; slots 224 x 160, 35 indices fit one row.
  expect_planes(carrier_planes(TransferMode::tiles, 200, 150), {{DRM_FORMAT_ABGR8888, 224, 161}});
  // 3840 x 2160 in 8-px tiles: 480 x 270 tiles = 129 600 indices in rows of 3 840 (34).
  expect_planes(carrier_planes(TransferMode::tiles, 3840, 2160, 8),
                {{DRM_FORMAT_ABGR8888, 3840, 2160 + 34}});
}

TEST(CarrierPlanes, Nv12TilesHaveYChromaWithBorderAndTheList) {
  // 200 x 150 in 32-px tiles: 7 x 5 slots; chroma slots of 16 + 2 sites a side.
  expect_planes(carrier_planes(TransferMode::tiles_nv12, 200, 150),
                {{DRM_FORMAT_R8, 224, 160}, {DRM_FORMAT_GR88, 7 * 18, 5 * 18},
                 {DRM_FORMAT_ABGR8888, 224, 1}});
  EXPECT_TRUE(carrier_planes(TransferMode::tiles_nv12, 200, 150, 7).empty()) << "odd tiles";
}

TEST(CarrierPlanes, ModesTheCarrierDoesNotTakeHaveNoPlanes) {
  EXPECT_TRUE(carrier_planes(TransferMode::automatic, 200, 150).empty());
  EXPECT_TRUE(carrier_planes(TransferMode::cpu_copy, 200, 150).empty());
  EXPECT_TRUE(carrier_planes(TransferMode::zero_copy, 200, 150).empty());
  EXPECT_TRUE(carrier_planes(TransferMode::tiles, 200, 150, 0).empty());
}

}  // namespace
}  // namespace ferry::offload
