#===- FusecStaticLLVM.cmake - Link LLVM/MLIR statically --------*- cmake -*-===#
#
# Debian's static MLIR archives name the shared libLLVM.so as a link dependency
# (which in turn needs z3, ICU, libxml2 and libedit). This rewrites every
# imported MLIR target to depend on LLVM's static component archives instead,
# swaps z3 out and zlib/zstd for their static archives, and links the C++
# runtime statically. The result needs only libc, libm and the loader.
#
#===----------------------------------------------------------------------===#

function(fusec_make_llvm_static)
  llvm_map_components_to_libnames(fusec_llvm_static_libs
    Core Support Analysis TransformUtils Passes IPO IRReader AsmParser
    BitReader BitWriter Linker MC Target TargetParser Object FrontendOpenMP
    FrontendOffloading NVPTX)
  add_library(FusecLLVMStatic INTERFACE)
  target_link_libraries(FusecLLVMStatic INTERFACE ${fusec_llvm_static_libs})

  foreach(tgt ${MLIR_EXPORTED_TARGETS})
    if(NOT TARGET ${tgt})
      continue()
    endif()
    get_target_property(kind ${tgt} TYPE)
    if(NOT kind STREQUAL "STATIC_LIBRARY")
      continue()
    endif()
    get_target_property(deps ${tgt} INTERFACE_LINK_LIBRARIES)
    if(NOT deps)
      continue()
    endif()
    list(TRANSFORM deps REPLACE "^LLVM$" "FusecLLVMStatic")
    list(TRANSFORM deps REPLACE "^\\$<LINK_ONLY:LLVM>$" "FusecLLVMStatic")
    set_target_properties(${tgt} PROPERTIES INTERFACE_LINK_LIBRARIES "${deps}")
  endforeach()

  # LLVMSupport: no z3; static zstd and zlib.
  find_library(FUSEC_ZSTD_STATIC NAMES libzstd.a REQUIRED)
  find_library(FUSEC_ZLIB_STATIC NAMES libz.a REQUIRED)
  get_target_property(deps LLVMSupport INTERFACE_LINK_LIBRARIES)
  set(newdeps)
  foreach(d ${deps})
    if(d MATCHES "z3")
      continue()
    elseif(d MATCHES "zstd")
      list(APPEND newdeps ${FUSEC_ZSTD_STATIC})
    elseif(d MATCHES "ZLIB::ZLIB" OR d MATCHES "libz\\.so" OR d STREQUAL "z")
      list(APPEND newdeps ${FUSEC_ZLIB_STATIC})
    else()
      list(APPEND newdeps ${d})
    endif()
  endforeach()
  set_target_properties(LLVMSupport PROPERTIES INTERFACE_LINK_LIBRARIES "${newdeps}")

  add_compile_options(-ffunction-sections -fdata-sections)
  add_link_options(-static-libstdc++ -static-libgcc -Wl,--gc-sections)
endfunction()

# Debian's abseil CMake package imports only the shared libraries; point every
# imported absl target at the static archive beside it instead.
function(fusec_make_absl_static)
  get_directory_property(imported IMPORTED_TARGETS)
  foreach(tgt ${imported})
    if(NOT tgt MATCHES "^absl::")
      continue()
    endif()
    get_target_property(kind ${tgt} TYPE)
    if(NOT kind STREQUAL "SHARED_LIBRARY")
      continue()
    endif()
    get_target_property(location ${tgt} IMPORTED_LOCATION_NONE)
    if(NOT location)
      continue()
    endif()
    string(REGEX REPLACE "\\.so(\\.[0-9.]+)?$" ".a" archive "${location}")
    if(NOT EXISTS "${archive}")
      message(FATAL_ERROR "FUSEC_STATIC_LLVM: no static archive ${archive} for ${tgt}")
    endif()
    set_target_properties(${tgt} PROPERTIES
      IMPORTED_LOCATION_NONE "${archive}" IMPORTED_LOCATION "${archive}"
      IMPORTED_SONAME_NONE "" IMPORTED_NO_SONAME TRUE)
  endforeach()
endfunction()
